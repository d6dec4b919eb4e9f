// Pure rules of environment protection: who may review a pending deployment, when a gate
// opens, and when a waiting deployment times out.

export const PROTECTION_TIMEOUT_MS = 30 * 24 * 60 * 60 * 1000;

export type RuleState = "pending" | "approved" | "rejected";

export interface GateView {
  /** Required reviewers (user logins); empty when the environment has none. */
  reviewers: string[];
  review: RuleState;
  /** State of each custom protection rule app. */
  rules: RuleState[];
  createdAtMs: number;
  /** Wait timer end; 0 when the environment has no wait timer. */
  waitUntilMs: number;
}

export type GateOutcome =
  | { state: "pending"; reasons: string[] }
  | { state: "approved"; reasons: string[] }
  | { state: "rejected" | "timed_out"; reasons: string[] };

/** Where a gate stands: any rejection closes it, every rule approved (and timer elapsed) opens it. */
export function gateOutcome(g: GateView, nowMs: number): GateOutcome {
  if (g.review === "rejected") return { state: "rejected", reasons: ["a required reviewer rejected the deployment"] };
  if (g.rules.includes("rejected"))
    return { state: "rejected", reasons: ["a deployment protection rule rejected the deployment"] };
  const waiting: string[] = [];
  if (g.reviewers.length > 0 && g.review !== "approved") waiting.push("required reviewers");
  if (g.rules.some((r) => r === "pending")) waiting.push("deployment protection rules");
  if (nowMs < g.waitUntilMs) waiting.push("wait timer");
  if (waiting.length === 0) return { state: "approved", reasons: ["every protection rule passed"] };
  if (nowMs - g.createdAtMs >= PROTECTION_TIMEOUT_MS && waiting.some((w) => w !== "wait timer")) {
    return { state: "timed_out", reasons: [`no decision within 30 days (waiting on ${waiting.join(", ")})`] };
  }
  return { state: "pending", reasons: waiting.map((w) => `waiting on ${w}`) };
}

export type ReviewDecision = { ok: true } | { ok: false; status: 403 | 422; message: string };

/** Whether a caller may review a pending deployment of an environment (document 001: required reviewers only). */
export function mayReview(
  caller: { kind: "user"; login: string } | { kind: "other" },
  reviewers: string[],
  envName: string,
): ReviewDecision {
  if (caller.kind !== "user") return { ok: false, status: 403, message: "Resource not accessible by integration" };
  if (!reviewers.some((r) => r.toLowerCase() === caller.login.toLowerCase())) {
    return { ok: false, status: 422, message: `${caller.login} is not a required reviewer for environment ${envName}` };
  }
  return { ok: true };
}
