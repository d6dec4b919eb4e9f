// How far a sync got: repositories done of the total, writes done of those planned, errors,
// and an estimate of the time left. The first sync of a large organisation is bounded by
// GitHub's write pacing (about one write per second), so the estimate starts from that pace
// and follows the measured one once there is enough of it.
import type { PlanRow } from "./plan.js";
import { scopeRepo } from "./targets.js";

/** GitHub asks integrations to leave about a second between writes. */
export const WRITES_PER_SECOND = 1;

export interface SyncProgress {
  org: string;
  phase: "reading" | "writing" | "done" | "stopped";
  repositories: number;
  repositoriesDone: number;
  writesPlanned: number;
  writesDone: number;
  errors: number;
  startedAt: string;
  /** Seconds left, when writes remain. */
  etaSeconds?: number;
}

/** Time to carry out `writes` at GitHub's pace. */
export function estimateSeconds(writes: number, perSecond = WRITES_PER_SECOND): number {
  return Math.ceil(writes / perSecond);
}

/** `45 s`, `12 min`, `2 h 5 min`. */
export function formatDuration(seconds: number): string {
  if (seconds < 90) return `${Math.max(0, Math.round(seconds))} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** One line for a person: `acme: 40/155 repositories, 80/310 writes, 0 errors, about 4 min left`. */
export function progressLine(p: SyncProgress): string {
  const left =
    p.etaSeconds !== undefined && p.writesDone < p.writesPlanned ? `, about ${formatDuration(p.etaSeconds)} left` : "";
  const phase =
    p.phase === "reading"
      ? " (reading current state)"
      : p.phase === "stopped"
        ? " (stopped; the next run resumes)"
        : "";
  return `${p.org}: ${p.repositoriesDone}/${p.repositories} repositories, ${p.writesDone}/${p.writesPlanned} writes, ${p.errors} errors${left}${phase}`;
}

/** The repository a row writes to; organisation-level rows count under the organisation. */
function bucketOf(row: PlanRow): string {
  return scopeRepo(row.scope)?.toLowerCase() ?? "";
}

export class ProgressTracker {
  readonly #started = Date.now();
  readonly #pending = new Map<string, number>();
  #firstWriteAt: number | undefined;
  #p: SyncProgress;

  constructor(
    org: string,
    private readonly report: ((p: SyncProgress) => void) | undefined,
  ) {
    this.#p = {
      org,
      phase: "reading",
      repositories: 0,
      repositoriesDone: 0,
      writesPlanned: 0,
      writesDone: 0,
      errors: 0,
      startedAt: new Date(this.#started).toISOString(),
    };
  }

  snapshot(): SyncProgress {
    return { ...this.#p };
  }

  /** The plan is known: `rows` are the writes to make across `repositories`. */
  planned(repositories: readonly string[], rows: readonly PlanRow[]): void {
    for (const row of rows) this.#pending.set(bucketOf(row), (this.#pending.get(bucketOf(row)) ?? 0) + 1);
    const withWrites = [...this.#pending.keys()].filter((k) => k !== "").length;
    this.#p = {
      ...this.#p,
      phase: "writing",
      repositories: repositories.length,
      repositoriesDone: repositories.length - withWrites,
      writesPlanned: rows.length,
      etaSeconds: estimateSeconds(rows.length),
    };
    this.#emit();
  }

  rowFinished(row: PlanRow, ok: boolean): void {
    this.#firstWriteAt ??= Date.now();
    if (ok) this.#p.writesDone++;
    else this.#p.errors++;
    const bucket = bucketOf(row);
    const left = (this.#pending.get(bucket) ?? 1) - 1;
    this.#pending.set(bucket, left);
    if (left === 0 && bucket !== "") this.#p.repositoriesDone++;
    this.#p.etaSeconds = this.#eta();
    this.#emit();
  }

  finish(phase: "done" | "stopped"): void {
    this.#p.phase = phase;
    this.#emit();
  }

  #eta(): number {
    const finished = this.#p.writesDone + this.#p.errors;
    const remaining = Math.max(0, this.#p.writesPlanned - finished);
    const elapsed = (Date.now() - (this.#firstWriteAt ?? Date.now())) / 1000;
    // A few writes say little about the pace; until then, GitHub's.
    if (finished < 5 || elapsed <= 0) return estimateSeconds(remaining);
    return Math.ceil(remaining / (finished / elapsed));
  }

  #emit(): void {
    this.report?.(this.snapshot());
  }
}

/** The store key of an organisation's last progress (how far the last or current sync got). */
export function progressKey(org: string): string {
  return `secrets/progress/${org.toLowerCase()}`;
}

/**
 * For the service: logs progress (and keeps it in the store, for people and the next run) at
 * most every `intervalMs`, and always when the sync ends or stops.
 */
export function loggedProgress(
  log: { info(obj: object, msg: string): void },
  save: (p: SyncProgress) => Promise<void>,
  intervalMs = 10_000,
): (p: SyncProgress) => void {
  let last = 0;
  return (p) => {
    const final = p.phase === "done" || p.phase === "stopped";
    const now = Date.now();
    if (!final && now - last < intervalMs) return;
    last = now;
    log.info({ progress: p }, `secrets sync progress: ${progressLine(p)}`);
    save(p).catch(() => undefined);
  };
}
