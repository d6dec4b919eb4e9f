// Failed jobs noted from their own deliveries, so the run's decision can read their logs before
// it lists the jobs rather than after. GitHub sends `workflow_job.completed` when a job ends,
// before its run's `workflow_run.completed`; without `read_ahead` nothing is read then, but a
// failed job whose log a rule would read is noted (its id, name, conclusion and failed steps: a
// few hundred bytes). The decision lists the attempt's notes and reads the first noted log first,
// alone; once the API has answered it (the redirect), the jobs list and the other reads go while
// the storage host is read: one round trip off the path from the failure to the re-run.
//
// A note only says where to start. The decision still judges the jobs from its own list: a log
// read early stands in only for a log the list says it needs, and what was not noted (a delivery
// late, lost, or worked by another replica after the decision began) is read as before. A log
// read early goes unused only when the run turns out to have failed in more jobs than
// `max_failed_jobs` (the notes are then fewer than the failures): at most that many reads.
import type { HandlerContext, InstallationOctokit, Outcome, Store } from "../../src/index.js";
import { failedSteps, failureConclusions, needsLog, type JobFacts } from "./decide.js";
import { fetchJobLog, toJobFacts, type RepoRef } from "./facts.js";
import type { RerunPolicy } from "./policy.js";

/** A note is kept as long as a log read ahead: a run that completes later lists its jobs alone. */
export const NOTE_TTL_MS = 6 * 3_600_000;

const prefixOf = (repoId: number, runId: number, attempt: number) => `rerun:failed-job:${repoId}:${runId}:${attempt}:`;

/** What a note is taken from: the job of a `workflow_job.completed` delivery, and its repository. */
export interface NotedJobPayload {
  workflow_job: Parameters<typeof toJobFacts>[0] & { id: number; run_id: number; run_attempt?: number; name: string };
  repository: { id: number };
}

/** Whether any rule of `policy` reads a log: without one no note is ever wanted. */
export function rulesReadLogs(policy: RerunPolicy): boolean {
  return policy.rules.some((r) => r.log);
}

/**
 * `workflow_job.completed` under a policy without `read_ahead`: note the failed job when the run's
 * decision would read its log. `why` is the reason read-ahead gives for not reading this job (the
 * policy's switch aside), judged by the caller; undefined when the job is one to note.
 */
export async function noteFailedJob(ctx: HandlerContext<any, RerunPolicy>, payload: NotedJobPayload, why: string | undefined): Promise<Outcome> {
  if (why) return { status: "skipped", reason: why };
  const job = payload.workflow_job;
  const attempt = job.run_attempt ?? 1;
  // Only the failed steps: the rules look at no other, and a job of many steps stays a small note.
  const all = toJobFacts(job);
  const facts: JobFacts = { ...all, steps: failedSteps(all) };
  await ctx.store.set(`${prefixOf(payload.repository.id, job.run_id, attempt)}${job.id}`, facts, { ttlMs: NOTE_TTL_MS });
  return { status: "done", summary: `noted job ${job.name} of run ${job.run_id} attempt ${attempt} as failed: the run's decision reads its log first` };
}

/** What the decision keeps of a log it read (the patterns matched, the tail). */
export type Digest<T> = (log: string) => Promise<T>;

export interface NotedReads<T> {
  /**
   * The reads started, by job id: each settles to the digest, or undefined when there was none to
   * digest (the read failed, or the log is not there): the decision reads that log itself, as
   * without a note. Never rejects.
   */
  reads: Map<number, Promise<T | undefined>>;
  /**
   * Settles once the API answered the first read (its redirect to the storage host, or a
   * refusal): the first request of a decision goes alone, so an exhausted rate limit is found by
   * one refused request and the client holds the rest back. Undefined when nothing is read.
   */
  first?: Promise<void>;
}

/**
 * The logs of noted failed jobs of one run attempt, read one after another as soon as the notes
 * are listed, each digested once read. Nothing is read when more jobs were noted than
 * `max_failed_jobs` (the decision reads no log then) or when a noted job would not have its log
 * read under `policy` now.
 */
export async function readNotedLogs<T>(
  store: Store,
  octokit: InstallationOctokit,
  ref: RepoRef,
  at: { repoId: number; runId: number; attempt: number },
  policy: RerunPolicy,
  digest: Digest<T>,
): Promise<NotedReads<T>> {
  const reads = new Map<number, Promise<T | undefined>>();
  let noted: JobFacts[];
  try {
    const prefix = prefixOf(at.repoId, at.runId, at.attempt);
    noted = (await store.list<JobFacts>(prefix)).flatMap(({ key, value }) => {
      const id = Number(key.slice(prefix.length));
      return Number.isSafeInteger(id) && value && typeof value.name === "string" && Array.isArray(value.steps) ? [{ ...value, id }] : [];
    });
  } catch {
    return { reads };
  }
  const failing = failureConclusions(policy);
  const wanted = noted.filter((job) => job.conclusion !== null && failing.has(job.conclusion));
  if (wanted.length > policy.max_failed_jobs) return { reads };
  let first: Promise<void> | undefined;
  // One after another, as the decision reads its logs: at most one log's text held at a time.
  let previous: Promise<unknown> = Promise.resolve();
  for (const job of wanted.filter((j) => needsLog(policy.rules, j))) {
    let answered: () => void = () => {};
    first ??= new Promise<void>((resolve) => (answered = resolve));
    const read = previous.then(async () => {
      try {
        // Not there: gone, or not published yet (GitHub may take a moment); the decision asks again.
        const log = await fetchJobLog(octokit, ref, job.id, answered);
        return log === null ? undefined : await digest(log);
      } catch {
        return undefined;
      } finally {
        answered();
      }
    });
    previous = read;
    reads.set(job.id, read);
  }
  return first ? { reads, first } : { reads };
}
