// What people see of a plan or a sync: Markdown for check runs, plain text for the CLI.
// Rows carry scope, name, action and reason only; values never reach this module.
import { clockTime, type Problem } from "../../src/index.js";
import { countPlan, type PlanRow } from "./plan.js";
import { wouldText, type Failure, type LeftAlone, type SyncResult } from "./sync.js";
import { predictsFailedWrites } from "./quotas.js";
import { scopeLabel } from "./targets.js";
import { estimateSeconds, formatDuration } from "./progress.js";

/** Check-run summaries are capped; unchanged rows are the first to go. */
const MAX_TABLE_ROWS = 300;

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");

function counts(rows: readonly PlanRow[]): string {
  const c = countPlan(rows);
  return `${c.create} to create, ${c.update} to update, ${c.delete} to delete, ${c.unchanged} unchanged`;
}

function tableRows(rows: readonly PlanRow[]): { shown: PlanRow[]; hidden: number } {
  const changing = rows.filter((r) => r.action !== "unchanged");
  const unchanged = rows.filter((r) => r.action === "unchanged");
  const shown = [...changing, ...unchanged].slice(0, MAX_TABLE_ROWS);
  return { shown, hidden: rows.length - shown.length };
}

export function planTable(rows: readonly PlanRow[]): string {
  if (rows.length === 0) return "_No targets._";
  const { shown, hidden } = tableRows(rows);
  const lines = ["| Scope | Name | Kind | Action | Reason |", "|---|---|---|---|---|"];
  for (const r of shown)
    lines.push(`| ${cell(scopeLabel(r.scope))} | ${cell(r.name)} | ${r.kind} | ${r.action} | ${cell(r.reason)} |`);
  if (hidden > 0) lines.push("", `_${hidden} more rows not shown._`);
  return lines.join("\n");
}

export function failureTable(failures: readonly Failure[]): string {
  const lines = ["| Scope | Name | Step | Error |", "|---|---|---|---|"];
  for (const f of failures.slice(0, MAX_TABLE_ROWS))
    lines.push(`| ${cell(scopeLabel(f.scope))} | ${cell(f.name ?? "")} | ${f.action} | ${cell(f.error)} |`);
  if (failures.length > MAX_TABLE_ROWS)
    lines.push("", `_${failures.length - MAX_TABLE_ROWS} more failures not shown._`);
  return lines.join("\n");
}

/** Targets someone else created, left as they are on purpose: reported, never a failure. */
export function leftAloneTable(rows: readonly LeftAlone[]): string {
  const lines = ["| Scope | Name | Kind | Why |", "|---|---|---|---|"];
  for (const r of rows.slice(0, MAX_TABLE_ROWS))
    lines.push(`| ${cell(scopeLabel(r.scope))} | ${cell(r.name)} | ${r.kind} | ${cell(r.reason)} |`);
  if (rows.length > MAX_TABLE_ROWS) lines.push("", `_${rows.length - MAX_TABLE_ROWS} more not shown._`);
  return lines.join("\n");
}

function leftAloneSection(result: SyncResult, plan: boolean): string[] {
  const n = result.leftAlone.length;
  if (n === 0) return [];
  const one = n === 1;
  const what = one
    ? "This target exists but Steward did not create it"
    : `These ${n} targets exist but Steward did not create them`;
  const done = plan
    ? `a merge leaves ${one ? "it as it is" : "them as they are"}`
    : one
      ? "it was left as it is"
      : "they were left as they are";
  return [
    "",
    "### Left alone (not Steward's)",
    "",
    `${what}, and the policy does not say \`adopt: true\`: ${done}, as documented. This is not a failure.`,
    "",
    leftAloneTable(result.leftAlone),
  ];
}

/** The warnings of a plan that say some of its writes will fail (over a GitHub limit, not near one). */
export function failingWarnings(result: SyncResult): string[] {
  return (result.warnings ?? []).filter(predictsFailedWrites);
}

/**
 * `steward/plan`'s conclusion: `failure` when its own text says writes will fail (merging it would
 * make them fail), `neutral` when part of it could not be planned, else `success`. Targets left
 * alone on purpose do not count.
 */
export function planConclusion(result: SyncResult): "success" | "neutral" | "failure" {
  if (failingWarnings(result).length) return "failure";
  return result.failures.length ? "neutral" : "success";
}

/**
 * `steward/sync`'s conclusion: `failure` when a read or write failed; targets left alone do not
 * count; `neutral` when writes were only reported (report-only mode), so it never reads as done.
 */
export function syncConclusion(result: SyncResult): "success" | "failure" | "neutral" {
  if (result.failures.length) return "failure";
  return result.reported?.length ? "neutral" : "success";
}

/** "would have created 1, updated 0, deleted 2 (report only)", or "" when nothing was held back. */
function wouldCounts(result: SyncResult): string {
  const rows = (result.reported ?? []).map((r) => r.row);
  if (rows.length === 0) return "";
  const c = countPlan(rows);
  return `would have created ${c.create}, updated ${c.update}, deleted ${c.delete} (report only)`;
}

/** The writes report-only mode held back: what each would have done and the setting that held it. */
function reportedSection(result: SyncResult): string[] {
  const reported = result.reported ?? [];
  if (reported.length === 0) return [];
  const lines = [
    "",
    "### Report only: not written",
    "",
    `Steward decided these writes and made none of them: report-only mode (${[...new Set(reported.map((r) => r.by))].map(cell).join("; ")}). Change \`mode: report\` to \`mode: act\` (or remove it, or the operator's setting) and the next sync makes them.`,
    "",
    "| Scope | Name | Kind | Would have | Reason | Report only by |",
    "|---|---|---|---|---|---|",
  ];
  for (const { row, by } of reported.slice(0, MAX_TABLE_ROWS))
    lines.push(
      `| ${cell(scopeLabel(row.scope))} | ${cell(row.name)} | ${row.kind} | ${wouldText(row)} | ${cell(row.reason)} | ${cell(by)} |`,
    );
  if (reported.length > MAX_TABLE_ROWS) lines.push("", `_${reported.length - MAX_TABLE_ROWS} more not shown._`);
  return lines;
}

/** GitHub's limits the plan goes past or near, with the counts (empty when none). */
function limitsSection(result: SyncResult): string[] {
  const warnings = result.warnings ?? [];
  return warnings.length ? ["", "### GitHub's limits", "", ...warnings.map((w) => `- :warning: ${cell(w)}`)] : [];
}

/**
 * How long applying the plan takes: GitHub paces writes at about one a second, so a first sync
 * of N repositories with one secret each takes about N seconds.
 */
export function planEstimate(rows: readonly PlanRow[]): string {
  const writes = rows.filter((r) => r.action !== "unchanged").length;
  if (writes === 0) return "Applying it makes no writes.";
  return `Applying it makes ${writes} write${writes === 1 ? "" : "s"}: about ${formatDuration(estimateSeconds(writes))} at GitHub's pace of about one write per second.`;
}

/** `steward/plan`: what a merge of this pull request would do. */
export function planSummary(result: SyncResult): { title: string; summary: string } {
  const failing = failingWarnings(result).length;
  const parts = [
    `Plan for **${result.org}** across ${result.repositories} repositories: ${counts(result.rows)}. Nothing has been applied. ${planEstimate(result.rows)}`,
  ];
  if (failing)
    parts.push(
      "",
      `:x: Applying it would fail in part: it goes over GitHub's limits and the writes past them will fail (see GitHub's limits below).`,
    );
  parts.push("", planTable(result.rows));
  if (result.failures.length) parts.push("", "### Could not plan", "", failureTable(result.failures));
  parts.push(...leftAloneSection(result, true));
  parts.push(...limitsSection(result));
  const title =
    counts(result.rows) +
    (failing ? `; writes would fail: over GitHub's limits` : "") +
    (result.leftAlone.length ? `; ${result.leftAlone.length} left alone` : "");
  return { title, summary: parts.join("\n") };
}

/** `steward/sync`: what a sync applied and what failed. */
export function syncSummary(result: SyncResult): { title: string; summary: string } {
  const applied = countPlan(result.applied);
  const would = wouldCounts(result);
  const title =
    (would && result.applied.length === 0
      ? would[0]!.toUpperCase() + would.slice(1)
      : `${applied.create} created, ${applied.update} updated, ${applied.delete} deleted${would ? `; ${would}` : ""}`) +
    (result.failures.length ? `, ${result.failures.length} failed` : "") +
    (result.leftAlone.length ? `, ${result.leftAlone.length} left alone` : "");
  const parts = [`Sync of **${result.org}** across ${result.repositories} repositories.`, ""];
  parts.push(
    result.applied.length
      ? planTable(result.applied)
      : would
        ? "_Nothing was written._"
        : "_Nothing to change: everything matches the policy._",
  );
  parts.push(...reportedSection(result));
  if (result.failures.length) parts.push("", "### Failed", "", failureTable(result.failures));
  parts.push(...leftAloneSection(result, false));
  if (result.pausedUntil)
    parts.push("", `Delayed by GitHub's rate limit until ${clockTime(result.pausedUntil)}; the rest continues then.`);
  parts.push(...limitsSection(result));
  return { title, summary: parts.join("\n") };
}

/** Opens every `steward/plan` of a fork's pull request. */
export function forkPlanNote(fork: string): string {
  return `This pull request comes from a fork (\`${cell(fork)}\`): its policy was validated for structure only, and none of its sources (\`env:\`, \`file:\`) was resolved.`;
}

/**
 * `steward/plan` for a fork's pull request: no plan, and why. The same text whatever the host
 * holds: a plan would resolve the fork's sources here and compare them with what was written.
 */
export function forkPlanSummary(fork: string, adminRepo: string): { title: string; summary: string } {
  const summary = [
    forkPlanNote(fork),
    "",
    "Steward computes no secrets plan for a fork's pull request: a plan resolves the sources on Steward's host and compares the values with what Steward last wrote, and this check would show the fork's author what it found. Nothing has been applied.",
    "",
    `To see the plan, push the branch to \`${cell(adminRepo)}\` itself and open the pull request from there.`,
  ];
  return { title: "No plan: pull request from a fork", summary: summary.join("\n") };
}

export function problemsSummary(problems: readonly Problem[]): string {
  return problems.map((p) => `- ${p.file}:${p.line}:${p.column} ${p.severity}: ${p.message}`).join("\n");
}

/** Plain text for `steward sync`. */
export function textReport(result: SyncResult): string {
  const rows = result.rows;
  const width = (f: (r: PlanRow) => string, min: number) => Math.max(min, ...rows.map((r) => f(r).length));
  const ws = width((r) => scopeLabel(r.scope), 5);
  const wn = width((r) => r.name, 4);
  const lines = [`${"SCOPE".padEnd(ws)}  ${"NAME".padEnd(wn)}  KIND      ACTION     REASON`];
  for (const r of rows)
    lines.push(
      `${scopeLabel(r.scope).padEnd(ws)}  ${r.name.padEnd(wn)}  ${r.kind.padEnd(8)}  ${r.action.padEnd(9)}  ${r.reason}`,
    );
  lines.push("", `${result.org}: ${result.repositories} repositories; plan: ${counts(result.rows)}.`);
  if (!result.dryRun) {
    const a = countPlan(result.applied);
    lines.push(`applied: ${a.create} created, ${a.update} updated, ${a.delete} deleted.`);
    for (const { row, by } of result.reported ?? [])
      lines.push(`report only: ${scopeLabel(row.scope)} ${row.name}: ${wouldText(row)}, not written (${by})`);
  } else lines.push(`dry run: nothing applied. ${planEstimate(result.rows)}`);
  for (const f of result.failures)
    lines.push(`failed: ${scopeLabel(f.scope)} ${f.name ?? ""} (${f.action}): ${f.error}`);
  for (const l of result.leftAlone)
    lines.push(`left alone (not Steward's): ${scopeLabel(l.scope)} ${l.name}: ${l.reason}`);
  if (result.pausedUntil)
    lines.push(`delayed by GitHub's rate limit until ${clockTime(result.pausedUntil)}; run again to finish.`);
  for (const w of result.warnings ?? []) lines.push(`warning: ${w}`);
  if (result.stopped)
    lines.push("stopped before the end: what was written is recorded; run again to finish (nothing is written twice).");
  return lines.join("\n");
}
