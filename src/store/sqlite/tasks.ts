// Scheduled tasks in SQLite: one row per (handler, key), leased while running. A task
// re-scheduled during its own run becomes a new generation, so finishing the old run
// does not delete it (periodic work re-schedules itself from onTask).
import type { Database, Statement } from "better-sqlite3";
import type { ClaimedTask, ScheduleRequest, StoredTask, TaskDecision, TaskStatus } from "../records.js";
import type { TasksPart } from "../contract.js";
import { leaseOwnerDead, newLeaseToken } from "../../lifecycle/process-owner.js";
import { writeTransaction } from "./write-transaction.js";

interface TaskRow {
  handler: string;
  key: string;
  run_at: number;
  data: string;
  installation_id: number | null;
  status: TaskStatus;
  attempts: number;
  generation: number;
  lease_token: string | null;
  last_error: string | null;
}

function toTask(r: TaskRow): StoredTask {
  return {
    handler: r.handler,
    key: r.key,
    runAt: new Date(r.run_at),
    data: JSON.parse(r.data) as unknown,
    installationId: r.installation_id ?? undefined,
    status: r.status,
    attempts: r.attempts,
    lastError: r.last_error ?? undefined,
  };
}

export class SqliteTasks implements TasksPart {
  readonly #find: Statement;
  readonly #insert: Statement;
  readonly #reset: Statement;
  readonly #due: Statement;
  readonly #anyDue: Statement;
  readonly #pending: Statement;
  readonly #nextDue: Statement;
  readonly #lease: Statement;
  readonly #schedule: (handler: string, r: ScheduleRequest) => void;
  // IMMEDIATE: another process on the same file cannot claim the same task in between.
  readonly #claim: (leaseMs: number) => ClaimedTask | undefined;

  constructor(private readonly db: Database) {
    this.#find = db.prepare("SELECT * FROM tasks WHERE handler = ? AND key = ?");
    this.#insert = db.prepare(
      `INSERT INTO tasks (handler, key, run_at, data, installation_id, status, attempts, generation, updated_at)
       VALUES (?, ?, ?, ?, ?, 'pending', 0, 1, ?)`,
    );
    this.#reset = db.prepare(
      `UPDATE tasks SET run_at = ?, data = ?, installation_id = ?, status = 'pending', attempts = 0, generation = generation + 1,
         lease_token = NULL, lease_until = NULL, last_error = NULL, updated_at = ?
       WHERE handler = ? AND key = ?`,
    );
    this.#due = db.prepare(
      `SELECT * FROM tasks WHERE (status = 'pending' AND run_at <= @now) OR (status = 'running' AND lease_until <= @now)
       ORDER BY run_at LIMIT 1`,
    );
    this.#anyDue = db
      .prepare(
        `SELECT EXISTS (SELECT 1 FROM tasks WHERE status = 'pending' AND run_at <= @now)
             OR EXISTS (SELECT 1 FROM tasks WHERE status = 'running' AND lease_until <= @now)`,
      )
      .pluck();
    this.#pending = db
      .prepare("SELECT count(*) FROM tasks WHERE status = 'running' OR (status = 'pending' AND run_at <= ?)")
      .pluck();
    this.#nextDue = db
      .prepare(
        `SELECT min(t) FROM (
           SELECT min(run_at) AS t FROM tasks WHERE status = 'pending'
           UNION ALL SELECT min(lease_until) FROM tasks WHERE status = 'running')`,
      )
      .pluck();
    this.#lease = db.prepare(
      "UPDATE tasks SET status = 'running', lease_token = ?, lease_until = ?, updated_at = ? WHERE handler = ? AND key = ? RETURNING *",
    );
    this.#claim = writeTransaction(db, (leaseMs: number) => {
      const now = Date.now();
      const due = this.#due.get({ now }) as TaskRow | undefined;
      if (!due) return undefined;
      const token = newLeaseToken();
      const row = this.#lease.get(token, now + leaseMs, now, due.handler, due.key) as TaskRow;
      return { token, generation: row.generation, task: toTask(row) };
    });
    this.#schedule = writeTransaction(db, (handler: string, r: ScheduleRequest) => {
      const now = Date.now();
      const data = JSON.stringify(r.data === undefined ? null : r.data);
      const existing = this.#find.get(handler, r.key) as TaskRow | undefined;
      const args = [r.runAt.getTime(), data, r.installationId ?? null, now] as const;
      if (!existing) {
        this.#insert.run(handler, r.key, ...args);
      } else if (existing.status !== "pending" || r.replace) {
        // A running, or dead, row is spent: the new request is the next generation.
        this.#reset.run(...args, handler, r.key);
      }
    });
  }

  async scheduleTask(handler: string, request: ScheduleRequest): Promise<void> {
    this.#schedule(handler, request);
  }

  async cancelTask(handler: string, key: string): Promise<void> {
    this.db.prepare("DELETE FROM tasks WHERE handler = ? AND key = ?").run(handler, key);
  }

  async claimTask(leaseMs: number): Promise<ClaimedTask | undefined> {
    // The engine asks after every run; looking is a read, only a due task takes the write lock.
    if (!this.#anyDue.get({ now: Date.now() })) return undefined;
    return this.#claim(leaseMs);
  }

  async finishTask(claim: ClaimedTask, decision: TaskDecision): Promise<void> {
    const { handler, key } = claim.task;
    const mine = "WHERE handler = ? AND key = ? AND generation = ? AND lease_token = ?";
    const ids = [handler, key, claim.generation, claim.token] as const;
    const now = Date.now();
    if (decision.status === "done") {
      this.db.prepare(`DELETE FROM tasks ${mine}`).run(...ids);
    } else if (decision.status === "retry") {
      this.db
        .prepare(
          `UPDATE tasks SET status = 'pending', run_at = ?, attempts = attempts + 1, last_error = ?, lease_token = NULL,
             lease_until = NULL, updated_at = ? ${mine}`,
        )
        .run(decision.retryAt.getTime(), decision.lastError, now, ...ids);
    } else {
      this.db
        .prepare(
          `UPDATE tasks SET status = 'dead', attempts = attempts + 1, last_error = ?, lease_token = NULL, lease_until = NULL,
             updated_at = ? ${mine}`,
        )
        .run(decision.lastError, now, ...ids);
    }
  }

  async listTasks(): Promise<StoredTask[]> {
    return (this.db.prepare("SELECT * FROM tasks ORDER BY run_at, handler, key").all() as TaskRow[]).map(toTask);
  }

  recoverOrphans(): number {
    const rows = this.db
      .prepare("SELECT handler, key, lease_token FROM tasks WHERE status = 'running'")
      .all() as TaskRow[];
    let recovered = 0;
    for (const r of rows) {
      if (r.lease_token !== null && leaseOwnerDead(r.lease_token)) {
        this.db
          .prepare(
            "UPDATE tasks SET status = 'pending', lease_token = NULL, lease_until = NULL WHERE handler = ? AND key = ? AND lease_token = ?",
          )
          .run(r.handler, r.key, r.lease_token);
        recovered++;
      }
    }
    return recovered;
  }

  renewLease(token: string, until: number): boolean {
    return this.db.prepare("UPDATE tasks SET lease_until = ? WHERE lease_token = ?").run(until, token).changes > 0;
  }

  releaseLease(token: string, dueAt?: number): void {
    this.db
      .prepare(
        "UPDATE tasks SET status = 'pending', lease_token = NULL, lease_until = NULL, run_at = coalesce(?, run_at) WHERE lease_token = ? AND status = 'running'",
      )
      .run(dueAt ?? null, token);
  }

  /** Tasks running or due by `now`. */
  pending(now: number): number {
    return this.#pending.get(now) as number;
  }

  nextDueAt(): number | undefined {
    return (this.#nextDue.get() as number | null) ?? undefined;
  }
}
