// What the `steward/rerun` check run says. One check run per head sha explains every decision
// taken on that commit (several workflows, several attempts), newest first. Pure rendering.
import { ATTEMPTS_STOP, BUDGET_STOP, CAP_STOP, type JobVerdict } from "./decide.js";

export type ActionTaken =
  | "rerun_failed_jobs"
  | "rerun_workflow"
  | "rerun_job"
  | "gave_up"
  | "refused"
  | "budget"
  | "cancelled"
  | "planned"
  | "stood_down"
  | "would_rerun";

export interface Explanation {
  runId: number;
  workflow: string;
  /** The attempt that failed and was judged. */
  attempt: number;
  maxAttempts: number;
  htmlUrl?: string;
  action: ActionTaken;
  /** Extra words on the action (e.g. the API's refusal message, the job re-run alone). */
  detail?: string;
  reasons: string[];
  verdicts: JobVerdict[];
  /** Re-run as a flake (failed between two passing commits), not by a rule. Absent in older records. */
  flake?: boolean;
  /** Whether the policy's words were withheld from `reasons` and `verdicts` (absent: a flake's, which has none). */
  withheld?: boolean;
  at: string;
}

export const CHECK_NAME = "steward/rerun";
/** Older explanations beyond this many are dropped from the check run (the audit log keeps them). */
export const MAX_EXPLANATIONS = 20;

export function actionText(
  e: Pick<Explanation, "action" | "attempt" | "maxAttempts" | "detail"> & { verdicts?: readonly JobVerdict[] },
): string {
  const next = `attempt ${e.attempt + 1} of ${e.maxAttempts}`;
  // Only when there are: the other failed jobs the decision judged (re-run later, or not at all).
  const others = (e.verdicts ?? []).filter((v) => v.name !== e.detail);
  const stay = others.some((v) => !v.transient)
    ? "; the other failed jobs stay failed"
    : others.length
      ? "; the other transient jobs follow, one attempt after another"
      : "";
  switch (e.action) {
    case "rerun_failed_jobs":
      return `re-ran the failed jobs and their dependents (${next})`;
    case "rerun_workflow":
      return `re-ran the whole workflow (${next})`;
    case "rerun_job":
      return `re-ran job ${e.detail ?? ""} and its dependents alone${stay} (${next})`;
    case "budget":
      return `not re-run: a budget stopped it${e.detail ? ` (${e.detail})` : ""}`;
    case "cancelled":
      return `not re-run: the planned re-run was cancelled${e.detail ? ` (${e.detail})` : ""}`;
    case "planned":
      return `re-run planned${e.detail ? ` for ${e.detail}` : ""}, not made yet (${next})`;
    case "stood_down":
      return `not re-run: the planned re-run stood down${e.detail ? ` (${e.detail})` : ""}`;
    case "gave_up":
      return "not re-run";
    case "would_rerun":
      return `would have re-run ${e.detail ?? `(${next})`}`;
    case "refused":
      return `not re-run: the API refused${e.detail ? ` (${e.detail})` : ""}`;
  }
}

export function titleOf(e: Explanation): string {
  const run = `${e.workflow} attempt ${e.attempt}`;
  switch (e.action) {
    case "rerun_failed_jobs":
    case "rerun_workflow":
    case "rerun_job":
      return `Re-ran ${run}: ${e.flake ? "flake (failed between passing commits)" : "transient failure"}`;
    case "budget":
      return `Did not re-run ${run}: daily budget spent`;
    case "cancelled":
      return `Did not re-run ${run}: cancelled`;
    case "planned":
      return `Re-run of ${run} planned`;
    case "would_rerun":
      return `Would have re-run ${run}: ${e.flake ? "flake (failed between passing commits)" : "transient failure"} (report only)`;
    case "stood_down":
      return `Did not re-run ${run}: stood down`;
    case "refused":
      return `Could not re-run ${run}`;
    case "gave_up":
      return `Did not re-run ${run}${stopOf(e.reasons)}`;
  }
}

/** Which stop ended it, for the title (GitHub's limit, the policy's attempts, the daily budget). */
function stopOf(reasons: readonly string[]): string {
  if (reasons.some((r) => r.startsWith(CAP_STOP))) return ": GitHub's limit of re-runs reached";
  if (reasons.some((r) => r.includes(`: ${ATTEMPTS_STOP} (`))) return ": attempts exhausted";
  if (reasons.some((r) => r.startsWith(BUDGET_STOP))) return ": daily budget spent";
  return "";
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

export function renderExplanation(e: Explanation): string {
  const runLink = e.htmlUrl ? `[run ${e.runId}](${e.htmlUrl})` : `run ${e.runId}`;
  const lines = [`### ${cell(e.workflow)}: ${runLink}, attempt ${e.attempt}`, "", `**Action:** ${actionText(e)}.`, ""];
  if (e.reasons.length) {
    for (const r of e.reasons) lines.push(`- ${r}`);
    lines.push("");
  }
  if (e.verdicts.length) {
    lines.push("| Failed job | Conclusion | Transient | Why |", "|---|---|---|---|");
    for (const v of e.verdicts) {
      lines.push(`| ${cell(v.name)} | ${v.conclusion ?? ""} | ${v.transient ? "yes" : "no"} | ${cell(v.reason)} |`);
    }
    lines.push("");
  }
  return lines.join("\n");
}

/** Check run title and summary for a commit's explanations (oldest first in, newest first out). */
/** An explanation made while the policy's words could be shown here, without them. */
function withoutPolicyWords(e: Explanation): Explanation {
  return {
    ...e,
    reasons: [
      "the rules' globs and patterns are withheld from this report: this decision was made while they could be shown here",
    ],
    verdicts: e.verdicts.map((v) => ({
      ...v,
      reason: v.transient ? `matched rule ${(v.rule ?? 0) + 1}` : "matched no rule",
    })),
  };
}

export function renderCheck(history: readonly Explanation[]): { title: string; summary: string } {
  const latest = history[history.length - 1];
  if (!latest) return { title: "No re-run decisions", summary: "" };
  const shown = history.slice(-MAX_EXPLANATIONS).reverse();
  const dropped = history.length - shown.length;
  // The latest decision says whether this repository's readers may see the policy's words now (a
  // repository made public since): earlier explanations that showed them are shown without them.
  const withholdNow = shown.find((e) => e.withheld !== undefined)?.withheld === true;
  const parts = shown.map((e) => renderExplanation(withholdNow && e.withheld === false ? withoutPolicyWords(e) : e));
  if (dropped > 0) parts.push(`_${dropped} older decisions not shown._`);
  return { title: titleOf(latest), summary: parts.join("\n") };
}
