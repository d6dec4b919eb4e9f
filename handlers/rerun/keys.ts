// The rerun handler's state in the store: every key it reads or writes is named here, and how
// long each kind of record is kept.

/** Decisions, explanations and plans are kept longer than GitHub redelivers (days). */
export const DECIDED_TTL_MS = 30 * 24 * 3_600_000;

/** `ctx.once` key of the one decision on a run attempt. */
export function decisionKey(repoId: number, runId: number, attempt: number): string {
  return `decision:${repoId}:${runId}:${attempt}`;
}

/**
 * `ctx.once` key of asking for the re-run of a run attempt; each try after an "already running"
 * refusal asks anew (the refusal is recorded as that try's outcome).
 */
export function requestKey(repoId: number, runId: number, attempt: number, tries: number): string {
  return `rerun:${repoId}:${runId}:${attempt}:request:${tries}`;
}

/** Scheduler key of a re-run carried out later (the policy's delay); `busy` retries add `:busy:N`. */
export function taskKey(repoId: number, runId: number, attempt: number): string {
  return `rerun:${repoId}:${runId}:${attempt}`;
}

/** The explanations shown in one commit's `steward/rerun` check run. */
export function historyKey(repoId: number, headSha: string): string {
  return `rerun:history:${repoId}:${headSha}`;
}

/** One slot per re-run requested on a UTC day (`rerun.daily_budget`). */
export function budgetDayPrefix(repoId: number, day: string): string {
  return `rerun:budget:${repoId}:${day}:`;
}

export function budgetLockKey(repoId: number): string {
  return `rerun:budget-lock:${repoId}`;
}

/** Re-runs of a merge group's runs planned for later, under the group's head commit. */
export function planPrefix(repoId: number, headSha: string): string {
  return `rerun:mq:${repoId}:${headSha}:`;
}

/** `ctx.once` key of acting on one flake (a job of a run attempt). */
export function flakeKey(repoId: number, runId: number, attempt: number, job: string): string {
  return `flake:${repoId}:${runId}:${attempt}:${job}`;
}

const FLAKES_PREFIX = "rerun:flakes:";

/** Flake records of one repository (`steward flakes`), or of every repository without one. */
export function flakePrefix(repository?: string): string {
  return repository === undefined ? FLAKES_PREFIX : `${FLAKES_PREFIX}${repository.toLowerCase()}:`;
}

/** Decision facts kept for simulating another policy, of one repository or of all. */
export function rerunFactsPrefix(repository?: string): string {
  return `facts:rerun:${repository ? `${repository.toLowerCase()}:` : ""}`;
}
