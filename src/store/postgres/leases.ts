// Leases over both deliveries (their queue rows) and tasks in PostgreSQL, found by token (an
// index on each table). Renewal, a graceful hand-back and the recovery of work whose owner died check the
// same ownership rule: the row is running under this token.
import type pg from "pg";
import { leaseOwnerDead } from "../../lifecycle/process-owner.js";
import type { LeasesPart } from "../contract.js";
import type { WorkSignal } from "./work-signal.js";

export class PostgresLeases implements LeasesPart {
  constructor(
    private readonly pool: pg.Pool,
    private readonly s: string,
    private readonly signal: WorkSignal,
  ) {}

  async renewLease(token: string, leaseMs: number): Promise<boolean> {
    const { rows } = await this.pool.query<{ n: number }>(
      `WITH d AS (UPDATE ${this.s}.queue SET lease_until = $2 WHERE lease_token = $1 RETURNING 1),
            t AS (UPDATE ${this.s}.tasks SET lease_until = $2 WHERE lease_token = $1 AND status = 'running' RETURNING 1)
       SELECT ((SELECT count(*) FROM d) + (SELECT count(*) FROM t))::int AS n`,
      [token, new Date(Date.now() + leaseMs)],
    );
    return rows[0]!.n > 0;
  }

  /**
   * The work goes back to the queue. Given back (`release`): due now, and the attempt its claim
   * counted is not used up; taken from a dead owner (`orphan`): as it was when claimed.
   */
  async #giveBack(token: string, mode: "release" | "orphan", dueAt?: Date): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `WITH d AS (
         UPDATE ${this.s}.queue SET lease_token = NULL, lease_until = NULL,
           attempts = CASE WHEN $2 THEN greatest(0, attempts - 1) ELSE attempts END,
           run_at = CASE WHEN $2 THEN $3 ELSE run_at END
         WHERE lease_token = $1 RETURNING 1
       ), t AS (
         UPDATE ${this.s}.tasks SET status = 'pending', lease_token = NULL, lease_until = NULL,
           run_at = coalesce($4, run_at)
         WHERE lease_token = $1 AND status = 'running' RETURNING 1
       )
       SELECT ((SELECT count(*) FROM d) + (SELECT count(*) FROM t))::int AS n`,
      [token, mode === "release", dueAt ?? new Date(), dueAt ?? null],
    );
    const n = rows[0]!.n;
    if (n > 0) this.signal.notify();
    return n;
  }

  async releaseLease(token: string, dueAt?: Date): Promise<void> {
    await this.#giveBack(token, "release", dueAt);
  }

  /**
   * Work leased by a process on this host that no longer exists goes back at once; work of
   * a replica on another host comes back when its lease expires (claims take expired leases).
   */
  async recoverOrphans(): Promise<number> {
    const { rows } = await this.pool.query<{ token: string }>(
      `SELECT lease_token AS token FROM ${this.s}.queue WHERE lease_token IS NOT NULL
       UNION ALL SELECT lease_token FROM ${this.s}.tasks WHERE status = 'running' AND lease_token IS NOT NULL`,
    );
    let recovered = 0;
    for (const { token } of rows) {
      if (leaseOwnerDead(token)) recovered += await this.#giveBack(token, "orphan");
    }
    return recovered;
  }

  /** Deliveries queued, awaiting a retry or running, plus tasks running or due by `now`. */
  async pendingWork(now: Date): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT ((SELECT count(*) FROM ${this.s}.queue)
        + (SELECT count(*) FROM ${this.s}.tasks WHERE status = 'running' OR (status = 'pending' AND run_at <= $1)))::int AS n`,
      [now],
    );
    return rows[0]!.n;
  }

  /** Earliest time a queued delivery, retry or task becomes due, or a lease runs out. */
  async nextDueAt(): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ at: Date | null }>({
      name: "steward-next-due",
      text: `SELECT least(
         (SELECT min(run_at) FROM ${this.s}.queue WHERE lease_token IS NULL),
         (SELECT min(lease_until) FROM ${this.s}.queue WHERE lease_token IS NOT NULL),
         (SELECT min(run_at) FROM ${this.s}.tasks WHERE status = 'pending'),
         (SELECT min(lease_until) FROM ${this.s}.tasks WHERE status = 'running')) AS at`,
    });
    return rows[0]!.at ?? undefined;
  }
}
