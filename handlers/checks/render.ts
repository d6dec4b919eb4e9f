// The steward/config check run's content from an evaluation: title, conclusion, one
// annotation per problem, and a summary with the problem table, the effective policy per
// section and the changes against the base branch. Pure.
import { stringify } from "yaml";
import type { Annotation, CheckConclusion, Problem } from "../../src/index.js";
import type { Evaluation, FileReport } from "./decide.js";

export interface RenderContext {
  baseRef: string;
  /** `owner/repo` of the org file when this repository merges over one. */
  orgSource: string | undefined;
  fork: boolean;
  /**
   * Set when readers of this check may not read the org file: `shown` is the evaluation without
   * it (this repository's file with defaults), which is all the report shows of policies.
   */
  withheld?: { reason: string; shown: Evaluation };
}

export interface RenderedCheck {
  conclusion: CheckConclusion;
  title: string;
  summary: string;
  annotations: Annotation[];
  /** Report-only mode: the conclusion the verdict would have had, and the setting that held it back. */
  reportOnly?: { would: CheckConclusion; by: string };
}

/**
 * steward/config in report-only mode. Its acting write is a `failure` conclusion, which blocks the
 * merge where the check is required: that becomes `neutral` (which blocks nothing), the title says
 * it would have failed and the summary why not. The annotations stay, at `warning` level, so the
 * problems are still shown on their lines. A passing verdict blocks nothing and is left as it is.
 */
export function reportOnlyCheck(check: RenderedCheck, by: string): RenderedCheck {
  const note = `> **Report only** (${by}): Steward checks and reports as it would, and a failing verdict does not block the merge.`;
  if (check.conclusion !== "failure")
    return { ...check, summary: `${note}\n\n${check.summary}`, reportOnly: { would: check.conclusion, by } };
  return {
    conclusion: "neutral",
    title: `Would have failed: ${check.title} (report only)`,
    summary: `${note} This check would have concluded **failure**; it concludes neutral instead.\n\n${check.summary}`,
    annotations: check.annotations.map((a) => ({ ...a, annotation_level: "warning" })),
    reportOnly: { would: "failure", by },
  };
}

export function renderCheck(evaluation: Evaluation, ctx: RenderContext): RenderedCheck {
  const files = evaluation.files;
  const problems = files.flatMap((f) => f.problems);
  const conclusion: CheckConclusion = evaluation.errors > 0 ? "failure" : "success";
  const title =
    evaluation.errors > 0
      ? `${count(evaluation.errors, "problem")} in ${count(new Set(problems.filter((p) => p.severity === "error").map((p) => p.file)).size, "policy file")}`
      : `Policy valid: ${count(files.length, "file")} checked${evaluation.warnings > 0 ? `, ${count(evaluation.warnings, "warning")}` : ""}`;
  const out: string[] = [];
  if (ctx.withheld && ctx.orgSource) {
    const hidden = evaluation.elsewhere.length;
    out.push(
      `> The organisation's policy in \`${ctx.orgSource}\` is withheld from this check (${ctx.withheld.reason}): the effective policy and the changes below are this repository's file with defaults, not merged over it${hidden > 0 ? `, and ${count(hidden, "problem")} in that file ${hidden === 1 ? "is" : "are"} not shown` : ""}. The verdict still takes it into account.\n`,
    );
  }
  if (ctx.fork)
    out.push(
      "> This pull request comes from a fork: its files were read for this report only, and validated for structure only (nothing on Steward's host, such as a secret's `env:` or `file:` source, was looked up).\n",
    );
  if (problems.length > 0) {
    out.push("## Problems\n", "| File | Line | Column | Severity | Problem |", "|---|---|---|---|---|");
    for (const p of problems)
      out.push(`| \`${cell(p.file)}\` | ${p.line} | ${p.column} | ${p.severity} | ${cell(p.message)} |`);
    out.push("");
  }
  if (evaluation.elsewhere.length > 0 && !ctx.withheld) {
    out.push(
      "## Problems in files this pull request does not change\n",
      "These do not fail this check, but the sections they are in are not applied.\n",
    );
    for (const p of evaluation.elsewhere) out.push(`- \`${p.file}:${p.line}:${p.column}\`: ${p.message}`);
    out.push("");
  }
  for (const f of ctx.withheld?.shown.files ?? files) out.push(...renderFile(f, ctx));
  return { conclusion, title, summary: out.join("\n"), annotations: problems.map(annotation) };
}

function renderFile(f: FileReport, ctx: RenderContext): string[] {
  const out = [`## \`${f.path}\` (${f.change})\n`];
  if (f.change === "removed") {
    out.push(
      f.kind === "policy"
        ? `Removed: the repository falls back to ${ctx.orgSource ? `the organisation's file in \`${ctx.orgSource}\` and ` : ""}the defaults.\n`
        : "Removed: the document no longer applies.\n",
    );
  }
  out.push(`### Changes compared with \`${ctx.baseRef}\`\n`);
  if (f.changes.length === 0) out.push("No change to the effective policy.\n");
  else {
    for (const c of f.changes) out.push(`- \`${c.path}\`: ${show(c.before)} → ${show(c.after)}`);
    out.push("");
  }
  if (f.effective === undefined) return out;
  const merged =
    f.kind === "policy" && ctx.orgSource && !ctx.withheld
      ? ` (merged over \`${ctx.orgSource}\`, with defaults)`
      : " (with defaults)";
  out.push(`### Effective policy${merged}\n`);
  if (f.kind === "document") out.push("```yaml", stringify(f.effective).trimEnd(), "```", "");
  else {
    for (const [key, value] of Object.entries(f.effective)) {
      out.push(
        `<details><summary><code>${key}</code></summary>\n`,
        "```yaml",
        stringify({ [key]: value }).trimEnd(),
        "```",
        "</details>\n",
      );
    }
    for (const key of f.broken) out.push(`- \`${key}\`: **not applied**, it has errors.`);
  }
  return out;
}

function annotation(p: Problem): Annotation {
  return {
    path: p.file,
    start_line: p.line,
    end_line: p.line,
    start_column: p.column,
    end_column: p.endColumn ?? p.column,
    annotation_level: p.severity === "error" ? "failure" : "warning",
    title: p.severity === "error" ? "Steward policy error" : "Steward policy warning",
    message: p.message,
  };
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

function show(value: unknown): string {
  if (value === undefined) return "_(unset)_";
  const json = JSON.stringify(value);
  return "`" + (json.length > 200 ? json.slice(0, 199) + "…" : json).replace(/`/g, "'") + "`";
}
