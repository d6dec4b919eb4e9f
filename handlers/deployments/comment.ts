// The comment attached to every answer: what Steward decided and why, in plain words.
import { formatInstant } from "./calendar.js";
import type { Evaluation } from "./decide.js";

/** GitHub keeps review comments short; longer text is cut with a visible note. */
export const MAX_COMMENT = 1000;

const HEADLINE: Record<Exclude<Evaluation["decision"], "none">, string> = {
  approve: "Steward approved the deployment to",
  reject: "Steward rejected the deployment to",
  wait: "Steward is holding the deployment to",
};

export function formatComment(evaluation: Evaluation, environment: string): string {
  if (evaluation.decision === "none") return evaluation.reasons.join("\n");
  let headline = `${HEADLINE[evaluation.decision]} ${environment}`;
  if (evaluation.decision === "wait" && evaluation.waitUntil)
    headline += ` until ${formatInstant(evaluation.waitUntil.getTime())}`;
  if (evaluation.decision === "wait" && evaluation.giveUpAt) {
    headline += ` (it is rejected at ${formatInstant(evaluation.giveUpAt.getTime())} if still waiting)`;
  }
  const text = [`${headline}:`, ...evaluation.reasons.map((r) => `- ${r}`)].join("\n");
  if (text.length <= MAX_COMMENT) return text;
  const note = "\n… (cut)";
  return text.slice(0, MAX_COMMENT - note.length) + note;
}
