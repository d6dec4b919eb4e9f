// Reading a failed job's log ahead of its run's decision. GitHub sends `workflow_job.completed`
// when a job ends, before the run's `workflow_run.completed`. A failed job whose log the rules
// would read has it read, scanned and kept then, so the decision finds it ready instead of
// spending two round trips in a row (the API's redirect, then the storage host) between reading
// the jobs and re-running. The decision still lists the jobs and judges them itself: a log read
// ahead stands in only for a log the decision asks for, scanned for the same patterns; anything
// missing (a delivery lost or late, a log not ready yet, the policy changed) is read as before.
//
// Off unless the policy asks (`rerun.read_ahead`): what the job's delivery cannot tell (the run's
// event, whether it comes from a fork, how many jobs fail in all) is judged with the run, so a
// log read ahead may go unused: one read per failed job of a run the policy then skips, and up
// to max_failed_jobs of a run given up for failing in more jobs than that.
import { MatchBudget, matchesAny, type HandlerContext, type Outcome, type Store } from "../../src/index.js";
import { branchOutOfScope, failureConclusions, needsLog } from "./decide.js";
import { fetchJobLog, toJobFacts } from "./facts.js";
import type { RerunPolicy } from "./policy.js";
import { LOG_TAIL_CHARS } from "./record.js";
import { scanLog, type ScannedLog } from "./scan.js";
import { noteFailedJob, rulesReadLogs } from "./failed-jobs-noted.js";

/** A log read ahead is kept this long for its run's decision (a run finishing later reads it itself). */
export const READ_AHEAD_TTL_MS = 6 * 3_600_000;

export interface WorkflowJobPayload {
  workflow_job: {
    id: number;
    run_id: number;
    run_attempt?: number;
    workflow_name?: string | null;
    head_branch?: string | null;
    name: string;
    conclusion: string | null;
    steps?: { name: string; conclusion: string | null }[] | null;
  };
  repository: { id: number; name: string; owner: { login: string } };
}

interface ReadAheadRecord {
  /** The patterns the log was scanned for (sorted, once each). */
  specs: string[];
  matched: string[];
  tail: string;
}

/** A log read ahead, as the decision takes a log it read itself. */
export interface ReadAheadLog {
  scanned: ScannedLog;
  tail: string;
}

const prefixOf = (repoId: number, runId: number, attempt: number) => `rerun:log:${repoId}:${runId}:${attempt}:`;

const specsOf = (policy: RerunPolicy): string[] => [...new Set(policy.rules.flatMap((r) => r.log ?? []))].sort();

/** Reads in flight in this process by key: the run's decision waits for one rather than reading the log again. */
const inFlight = new Map<string, Promise<unknown>>();

/** Why no log is read ahead under `policy`, whatever the job: judged before the payload is read. */
function policySkip(policy: RerunPolicy): string | undefined {
  if (!policy.enabled) return "re-runs are not enabled for this repository (rerun.enabled is false)";
  if (!policy.read_ahead) return "logs are read with the run's decision (rerun.read_ahead is false)";
  return undefined;
}

/** Why the job's log is not read ahead, or undefined when the run's decision would read it. */
export function readAheadSkip(policy: RerunPolicy, job: WorkflowJobPayload["workflow_job"]): string | undefined {
  return policySkip(policy) ?? logNotWanted(policy, job);
}

/** Why the run's decision would not read this job's log under `policy`, or undefined when it would. */
function logNotWanted(policy: RerunPolicy, job: WorkflowJobPayload["workflow_job"]): string | undefined {
  if (!job.conclusion || !failureConclusions(policy).has(job.conclusion)) return `job concluded "${job.conclusion ?? "none"}", not a failure the policy re-runs`;
  const branch = branchOutOfScope(policy, job.head_branch);
  if (branch) return branch;
  // The job names its workflow but not the workflow's file: a policy naming files is judged with the run.
  if (policy.workflows && !(job.workflow_name && matchesAny(policy.workflows, job.workflow_name))) return `workflow "${job.workflow_name ?? ""}" is not in rerun.workflows by name`;
  if (!needsLog(policy.rules, toJobFacts(job))) return "no rule reads this job's log";
  return undefined;
}

/** `workflow_job.completed`: read, scan and keep a failed job's log when the run's decision would read it. */
export async function readAhead(ctx: HandlerContext<any, RerunPolicy>): Promise<Outcome> {
  if (ctx.action !== "completed") return { status: "skipped", reason: `workflow_job action "${ctx.action}" is not completed` };
  const policy = ctx.policy;
  if (!policy) return { status: "skipped", reason: "delivery has no repository" };
  // Most repositories re-run nothing, or only on rules that read no log: they cost no parse of the payload.
  if (!policy.enabled) return { status: "skipped", reason: policySkip(policy)! };
  // Without read_ahead a failed job is only noted, for the decision to read its log early (failed-jobs-noted.ts).
  const noting = !policy.read_ahead;
  if (noting && !rulesReadLogs(policy)) return { status: "skipped", reason: "no rule reads a log (rerun.rules): nothing to note for the run's decision" };
  const payload = ctx.payload as WorkflowJobPayload;
  const job = payload.workflow_job;
  // The ids become a store key and a request path: anything but whole numbers is not read ahead.
  const ids = [job?.id, job?.run_id, job?.run_attempt ?? 1, payload.repository?.id];
  if (!ids.every((n) => Number.isSafeInteger(n) && (n as number) > 0)) return { status: "skipped", reason: "the delivery names no job, run or repository by id" };
  if (noting) return noteFailedJob(ctx, payload, logNotWanted(policy, job));
  const why = readAheadSkip(policy, job);
  if (why) return { status: "skipped", reason: why };
  const attempt = job.run_attempt ?? 1;
  const prefix = prefixOf(payload.repository.id, job.run_id, attempt);
  const key = `${prefix}${job.id}`;
  const label = `job ${job.name} of run ${job.run_id} attempt ${attempt}`;
  // A run with more failed jobs than max_failed_jobs is given up without its logs.
  const held = new Set([...(await ctx.store.list(prefix)).map((e) => e.key), ...[...inFlight.keys()].filter((k) => k.startsWith(prefix))]);
  if (held.has(key)) return { status: "skipped", reason: `the log of ${label} was already read ahead` };
  if (held.size >= policy.max_failed_jobs) return { status: "skipped", reason: `${held.size} logs of run ${job.run_id} attempt ${attempt} read ahead already (rerun.max_failed_jobs)` };
  const specs = specsOf(policy);
  const reading = (async (): Promise<ReadAheadRecord | { stopped: string } | undefined> => {
    const log = await fetchJobLog(ctx.octokit, { owner: payload.repository.owner.login, repo: payload.repository.name }, job.id);
    // Not there (yet: GitHub may take a moment to publish it): the decision reads it itself.
    if (log === null) return undefined;
    const scanned = await scanLog(log, specs, new MatchBudget());
    // Not kept: the decision reads the log itself, and fails closed if it cannot match it either.
    if (scanned.stopped) return { stopped: scanned.stopped };
    const record: ReadAheadRecord = { specs, matched: [...scanned.matched], tail: log.slice(-LOG_TAIL_CHARS) };
    await ctx.store.set(key, record, { ttlMs: READ_AHEAD_TTL_MS });
    return record;
  })();
  inFlight.set(key, reading);
  let record: ReadAheadRecord | { stopped: string } | undefined;
  try {
    record = await reading;
  } finally {
    inFlight.delete(key);
  }
  if (record && "stopped" in record) return { status: "skipped", reason: `the log of ${label} was not kept: ${record.stopped}` };
  if (!record) return { status: "skipped", reason: `the log of ${label} is not available yet; the run's decision reads it` };
  return { status: "done", summary: `read the log of ${label} ahead of the run's decision` };
}

/**
 * The logs of one run attempt read ahead and scanned for the patterns `policy` has now, by job id.
 * Reads still in flight in this process are waited for; one that fails is left to the decision.
 */
export async function logsReadAhead(store: Store, repoId: number, runId: number, attempt: number, policy: RerunPolicy): Promise<Map<number, ReadAheadLog>> {
  const prefix = prefixOf(repoId, runId, attempt);
  await Promise.all([...inFlight].filter(([k]) => k.startsWith(prefix)).map(([, p]) => p.catch(() => undefined)));
  const want = JSON.stringify(specsOf(policy));
  const logs = new Map<number, ReadAheadLog>();
  for (const { key, value } of await store.list<ReadAheadRecord>(prefix)) {
    if (!value || !Array.isArray(value.specs) || !Array.isArray(value.matched) || typeof value.tail !== "string") continue;
    if (JSON.stringify(value.specs) !== want) continue;
    const id = Number(key.slice(prefix.length));
    if (Number.isSafeInteger(id)) logs.set(id, { scanned: { matched: new Set(value.matched) }, tail: value.tail });
  }
  return logs;
}
