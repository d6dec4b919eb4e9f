// Carrying out the deployments decision for one waiting gate: its facts are read (facts.ts) and
// judged (decide.ts, org-gates.ts), then answered for good (once per gate, `ctx.once`) or held:
// a durable wait with a comment-only status and a scheduled re-evaluation.
import type { Logger } from "pino";
import type { InstallationOctokit, Once, Outcome, Scheduler, Store } from "../../src/index.js";
import { reportReason } from "../../src/index.js";
import { answerProtectionRule, isFinalRefusal, reviewPendingDeployment, type FinalState } from "./answer.js";
import { formatComment } from "./comment.js";
import { matchEnvironment, type Evaluation } from "./decide.js";
import { evaluateGated, factsRule, type OrgGate } from "./org-gates.js";
import { fetchFacts } from "./facts.js";
import { recordDeploymentFacts } from "./record.js";
import { reportEveryMs } from "./timetable.js";
import type { DeploymentsPolicy, EnvironmentRule } from "./policy.js";
import { answeredKey, answerOnceKey, taskKey, waitKey, type Gate, type WaitRecord } from "./waits.js";

/** An answer is remembered past GitHub's 30 days, after which no request for the run can come again. */
const ANSWER_MEMORY_MS = 35 * 86_400_000;

/** Waits on checks are also polled, in case a check event never arrives. */
export const RECHECK_POLL_MS = 60 * 60 * 1000;

export interface GateServices {
  octokit: InstallationOctokit;
  /** The required reviewer's Octokit (review gates only). */
  reviewer: InstallationOctokit | undefined;
  store: Store;
  once: Once;
  scheduler: Scheduler;
  log: Logger;
  /** The clock decisions are made by (the sandbox hub's in tests and the demo). */
  now: () => Date;
  /** Why the policy's own words (freeze reasons, windows) must not appear in this gate's answer, if so. */
  withheld?: (gate: Gate) => Promise<string | undefined>;
  /** The organisation's admin repository (calendar files live there). */
  adminRepo?: string;
  /** Organisation gates by custom property that apply to a repository's environment (none when absent). */
  orgGates?: (owner: string, repo: string, environment: string) => Promise<OrgGate[]>;
  /** Why the operator's setting makes the handler report only (STEWARD_MODE, STEWARD_REPORT_ONLY), if it does. */
  operatorReport?: string | undefined;
}

export interface GateInput {
  gate: Gate;
  sha: string;
  ref: string | undefined;
  /** `owner/name` of the fork whose code the run would deploy; absent for the repository's own code. */
  fork?: string;
  /** When GitHub started waiting, if the payload says; else the first time Steward saw it. */
  requestedAt?: Date;
}

const STATE: Record<"approve" | "reject", FinalState> = { approve: "approved", reject: "rejected" };

function refusal(error: { status: number; message: string }, what: string): Outcome {
  return { status: "failed", retryable: false, error: `GitHub refused ${what}: ${error.status} ${error.message}` };
}

async function dropWait(svc: GateServices, gate: Gate, sha: string): Promise<void> {
  await svc.store.delete(waitKey(gate, sha));
  await svc.scheduler.cancel(taskKey(gate));
}

async function sendFinal(svc: GateServices, gate: Gate, state: FinalState, comment: string): Promise<void> {
  const target = { owner: gate.owner, repo: gate.repo, runId: gate.runId };
  if (gate.path === "rule")
    await answerProtectionRule(svc.octokit, target, { environment: gate.environment, state, comment });
  else {
    if (!svc.reviewer) throw new Error("a review gate needs the reviewer token, and none is configured");
    await reviewPendingDeployment(svc.reviewer, target, { environmentId: gate.environmentId, state, comment });
  }
}

/** What sending a final answer came to: sent (or found sent), or refused by GitHub. */
type Sent = { state: FinalState; sha: string; at: string } | { refused: { status: number; message: string } };

async function answer(
  svc: GateServices,
  input: GateInput,
  evaluation: Evaluation,
  state: FinalState,
  report: string | undefined,
): Promise<Outcome> {
  if (report) return reportAnswer(svc, input, evaluation, state, report);
  const { gate } = input;
  const comment = formatComment(evaluation, gate.environment);
  // One final answer per gate, across deliveries, tasks and replicas. A refusal is GitHub's answer
  // too (not waiting any more, caller may not approve): asking again changes nothing.
  const sent = await svc.once(answerOnceKey(gate), {
    run: async (): Promise<Sent> => {
      try {
        await sendFinal(svc, gate, state, comment);
      } catch (error) {
        if (!isFinalRefusal(error)) throw error;
        if (gate.path !== "rule" || !alreadyDecidedAs(error, state))
          return { refused: { status: error.status, message: error.message } };
        // The answer of an earlier send was lost (a dropped connection, retried): GitHub says this
        // app's rule was decided as we asked, so that decision was ours and is done.
        svc.log.info(
          { environment: gate.environment, runId: gate.runId, state },
          "deployment answer found already given",
        );
      }
      return { state, sha: input.sha, at: svc.now().toISOString() };
    },
  });
  await svc.store.set(
    answeredKey(gate),
    "refused" in sent.value ? { refused: sent.value.refused, sha: input.sha } : sent.value,
    { ttlMs: ANSWER_MEMORY_MS },
  );
  await dropWait(svc, gate, input.sha);
  if (sent.state === "recorded")
    return { status: "skipped", reason: `${gate.environment} of run ${gate.runId} was already answered` };
  if ("refused" in sent.value) {
    svc.log.warn(
      { status: sent.value.refused.status, environment: gate.environment, runId: gate.runId },
      "deployment answer refused",
    );
    return refusal(sent.value.refused, `the ${state === "approved" ? "approval" : "rejection"} of ${gate.environment}`);
  }
  await svc.store.audit({
    kind: "deployment_answer",
    source: "deployments",
    details: answerDetails(input, state, evaluation),
  });
  return {
    status: "done",
    summary: `${state} ${gate.environment} for run ${gate.runId}: ${evaluation.reasons.join("; ")}`,
  };
}

/** What the audit trail keeps of an answer, given or only reported. */
function answerDetails(input: GateInput, state: FinalState, evaluation: Evaluation): Record<string, unknown> {
  const { gate } = input;
  return {
    repository: `${gate.owner}/${gate.repo}`,
    runId: gate.runId,
    environment: gate.environment,
    path: gate.path,
    state,
    sha: input.sha,
    reasons: evaluation.reasons,
  };
}

/**
 * Report mode: the answer that would have been given is recorded and shown, once per gate, and
 * nothing is approved or rejected. A protection rule's requester gets a comment-only status (what a
 * held deployment gets too); a review gate is left to its reviewers. No answer is remembered as
 * given, so switching the rule to act answers the gate on its next evaluation.
 */
async function reportAnswer(
  svc: GateServices,
  input: GateInput,
  evaluation: Evaluation,
  state: FinalState,
  report: string,
): Promise<Outcome> {
  const { gate } = input;
  const would = state === "approved" ? "approve" : "reject";
  const comment = reportComment(formatComment(evaluation, gate.environment), report);
  const reported = await svc.once(`${answerOnceKey(gate)}:report:${state}`, {
    run: async () => {
      if (gate.path === "rule") {
        try {
          await answerProtectionRule(svc.octokit, gate, { environment: gate.environment, comment });
        } catch (error) {
          if (!isFinalRefusal(error)) throw error;
          svc.log.warn({ status: error.status, environment: gate.environment }, "report-only status refused");
        }
      }
      return { state, at: svc.now().toISOString() };
    },
  });
  await dropWait(svc, gate, input.sha);
  if (reported.state === "recorded")
    return { status: "skipped", reason: `${gate.environment} of run ${gate.runId} was already reported` };
  await svc.store.audit({
    kind: "deployment_answer",
    source: "deployments",
    details: {
      ...answerDetails(input, state, evaluation),
      reportOnly: report,
      would: `would have ${state === "approved" ? "approved" : "rejected"}`,
    },
  });
  svc.log.info({ environment: gate.environment, runId: gate.runId, would, report }, "deployment answer reported only");
  return {
    status: "done",
    summary: `would have ${state} ${gate.environment} for run ${gate.runId} (report only, by ${report}): ${evaluation.reasons.join("; ")}`,
  };
}

/** A comment in report mode: the answer's words, said as what would have been done. */
export function reportComment(comment: string, report: string): string {
  const words = comment.replace(/^Steward (approved|rejected|is holding)/, (_, verb: string) =>
    verb === "is holding" ? "Steward would be holding" : `Steward would have ${verb}`,
  );
  return `Report only (${report}), nothing was approved or rejected. ${words}`.slice(0, 1000);
}

/**
 * Whether the gate only reports: the operator's setting, else every rule that applies says
 * `report` (a repository rule by its own `mode` or its section's, a gate by its rule's). A
 * repository cannot put an organisation gate in report mode: an acting gate answers.
 */
export function gateReport(
  svc: Pick<GateServices, "operatorReport">,
  policy: DeploymentsPolicy | undefined,
  match: { pattern: string; rule: EnvironmentRule } | undefined,
  gates: readonly OrgGate[],
): string | undefined {
  const own = match ? (match.rule.mode ?? policy?.mode ?? "act") : undefined;
  const rules = [...(own ? [own] : []), ...gates.map((g) => g.rule.mode ?? "act")];
  const all = rules.length > 0 && rules.every((m) => m === "report");
  const where =
    match?.rule.mode === "report"
      ? `deployments.environments.${match.pattern}.mode: report`
      : own === "report"
        ? "deployments.mode: report"
        : "the organisation gate's mode: report";
  return reportReason(svc.operatorReport, all && where);
}

/**
 * A 422 saying the rule was already decided with `state`: the hub answers "... was already
 * decided (approved)". A decision the other way, or any other refusal, is not ours.
 */
export function alreadyDecidedAs(error: { status: number; message: string }, state: FinalState): boolean {
  if (error.status !== 422) return false;
  const data = (error as { response?: { data?: { message?: unknown; errors?: { message?: unknown }[] } } }).response
    ?.data;
  const texts = [error.message, data?.message, ...(data?.errors ?? []).map((e) => e.message)].filter(
    (t): t is string => typeof t === "string",
  );
  return texts.some((t) => new RegExp(`already decided \\(${state}\\)`, "i").test(t));
}

/** When to look again: the window opening, a poll for checks, the next status report, never later than the give-up time. */
function nextLook(evaluation: Evaluation, now: Date, nextReport: number | undefined): number {
  const times = [evaluation.giveUpAt!.getTime()];
  if (nextReport !== undefined) times.push(nextReport);
  if (evaluation.waitUntil) times.push(evaluation.waitUntil.getTime());
  if (evaluation.recheckOn) times.push(now.getTime() + RECHECK_POLL_MS);
  return Math.min(...times);
}

/**
 * Whether a held deployment's status is sent now. Without `report_every`: whenever it changed.
 * With it: the first time, then at most (and, while held, at least) once per period.
 */
export function reportDue(
  comment: string,
  previous: WaitRecord | undefined,
  everyMs: number | undefined,
  now: number,
): boolean {
  if (everyMs === undefined) return comment !== previous?.lastComment;
  const last = previous?.lastReportAt ? Date.parse(previous.lastReportAt) : NaN;
  return !Number.isFinite(last) || now - last >= everyMs;
}

async function hold(
  svc: GateServices,
  input: GateInput,
  evaluation: Evaluation,
  requestedAt: Date,
  previous: WaitRecord | undefined,
  reportEvery: number | undefined,
  report: string | undefined,
): Promise<Outcome> {
  const { gate } = input;
  const plain = formatComment(evaluation, gate.environment);
  const comment = report ? reportComment(plain, report) : plain;
  const now = svc.now();
  const send = gate.path === "rule" && reportDue(comment, previous, reportEvery, now.getTime());
  if (send) {
    try {
      await answerProtectionRule(svc.octokit, gate, { environment: gate.environment, comment });
    } catch (error) {
      if (!isFinalRefusal(error)) throw error;
      await dropWait(svc, gate, input.sha);
      return refusal(error, `the status of ${gate.environment}`);
    }
  }
  const lastComment = send ? comment : previous?.lastComment;
  // The period counts from when the status was sent (answered), not from the decision before it.
  const lastReportAt = send ? svc.now().toISOString() : previous?.lastReportAt;
  const record: WaitRecord = {
    gate,
    sha: input.sha,
    ref: input.ref,
    requestedAt: requestedAt.toISOString(),
    ...(lastComment !== undefined ? { lastComment } : {}),
    ...(lastReportAt ? { lastReportAt } : {}),
    recheckOn: evaluation.recheckOn ?? null,
  };
  await svc.store.set(waitKey(gate, input.sha), record);
  const nextReport =
    gate.path === "rule" && reportEvery !== undefined && lastReportAt
      ? Date.parse(lastReportAt) + reportEvery
      : undefined;
  // The queue runs tasks by the service's real clock; `now` may be a sandbox clock, so schedule by delay.
  const delay = Math.max(0, nextLook(evaluation, now, nextReport) - now.getTime());
  await svc.scheduler.schedule({
    key: taskKey(gate),
    runAt: new Date(Date.now() + delay),
    data: { waitKey: waitKey(gate, input.sha) },
    installationId: gate.installationId,
    replace: true,
  });
  return {
    status: "done",
    summary: `waiting on ${gate.environment} for run ${gate.runId}: ${evaluation.reasons.join("; ")}`,
  };
}

/** Evaluate a gate against the policy and carry the decision out. */
export async function runGate(
  svc: GateServices,
  policy: DeploymentsPolicy | undefined,
  input: GateInput,
): Promise<Outcome> {
  const { gate } = input;
  if (await svc.store.get(answeredKey(gate)))
    return { status: "skipped", reason: `${gate.environment} of run ${gate.runId} was already answered` };
  const match = matchEnvironment(policy, gate.environment);
  const gates = (await svc.orgGates?.(gate.owner, gate.repo, gate.environment)) ?? [];
  if (!match && gates.length === 0) {
    await dropWait(svc, gate, input.sha);
    return { status: "skipped", reason: `no deployments policy matches environment ${gate.environment}` };
  }
  const rules = [...(match ? [match.rule] : []), ...gates.map((g) => g.rule)];
  const previous = await svc.store.get<WaitRecord>(waitKey(gate, input.sha));
  const now = svc.now();
  const requestedAt = previous ? new Date(previous.requestedAt) : (input.requestedAt ?? now);
  const facts = await fetchFacts(
    svc.octokit,
    gate,
    input.sha,
    rules.length === 1 ? rules[0]! : factsRule(rules),
    input.fork,
    svc.adminRepo,
    input.ref,
  );
  const request = {
    environment: gate.environment,
    ref: input.ref,
    sha: input.sha,
    requestedAt,
    ...(input.fork ? { fork: input.fork } : {}),
  };
  const withheld = await svc.withheld?.(gate);
  const evaluation = evaluateGated(policy, gates, request, facts, now, withheld ? { withheld } : {});
  // Decided exactly as it would be; report mode changes only what is done with the decision.
  const report = gateReport(svc, policy, match, gates);
  await recordDeploymentFacts(svc.store, gate, request, facts, now, evaluation.decision, gates);
  svc.log.info(
    {
      environment: gate.environment,
      runId: gate.runId,
      decision: evaluation.decision,
      reasons: evaluation.reasons,
      ...(report ? { reportOnly: report } : {}),
    },
    "deployment evaluated",
  );
  if (evaluation.decision === "approve" || evaluation.decision === "reject")
    return answer(svc, input, evaluation, STATE[evaluation.decision], report);
  if (evaluation.decision === "wait") {
    // The most frequent report any applying rule asks for.
    const every = rules.map(reportEveryMs).filter((ms): ms is number => ms !== undefined);
    return hold(svc, input, evaluation, requestedAt, previous, every.length ? Math.min(...every) : undefined, report);
  }
  return { status: "skipped", reason: evaluation.reasons.join("; ") };
}
