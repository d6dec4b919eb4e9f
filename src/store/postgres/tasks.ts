// Scheduled tasks in PostgreSQL: one row per (handler, key). A task re-scheduled during its
// own run becomes a new generation, so finishing the old run leaves it alone (periodic work
// re-schedules itself). Claims skip rows another replica is claiming (SKIP LOCKED).
import type pg from "pg";
import type { ClaimedTask, ScheduleRequest, StoredTask, TaskDecision } from "../records.js";
import type { TasksPart } from "../contract.js";
import { tokenOwner, toTask, type TaskRow } from "./rows.js";
import type { WorkSignal } from "./work-signal.js";

export class PostgresTasks implements TasksPart {
  constructor(
    private readonly pool: pg.Pool,
    private readonly s: string,
    private readonly signal: WorkSignal,
  ) {}

  /** A pending task is kept unless `replace`; a running or dead one is spent: the request is its next generation. */
  async scheduleTask(handler: string, r: ScheduleRequest): Promise<void> {
    const { rowCount } = await this.pool.query(
      `INSERT INTO ${this.s}.tasks AS t (handler, key, run_at, data, installation_id, status, attempts, generation, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'pending', 0, 1, $6)
       ON CONFLICT (handler, key) DO UPDATE SET run_at = excluded.run_at, data = excluded.data, installation_id = excluded.installation_id,
         status = 'pending', attempts = 0, last_error = NULL, lease_token = NULL, lease_until = NULL,
         generation = t.generation + 1, updated_at = excluded.updated_at
       WHERE t.status <> 'pending' OR $7`,
      [
        handler,
        r.key,
        r.runAt,
        JSON.stringify(r.data === undefined ? null : r.data),
        r.installationId ?? null,
        new Date(),
        r.replace === true,
      ],
    );
    if (rowCount === 1) this.signal.notify();
  }

  async cancelTask(handler: string, key: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.s}.tasks WHERE handler = $1 AND key = $2`, [handler, key]);
  }

  /** The earliest due task, or a running one whose lease expired. */
  async claimTask(leaseMs: number): Promise<ClaimedTask | undefined> {
    const now = Date.now();
    const { rows } = await this.pool.query<TaskRow>({
      name: "steward-claim-task",
      text: `WITH next AS (
         SELECT handler, key FROM ${this.s}.tasks
         WHERE status IN ('pending', 'running') AND run_at <= $1 AND (status <> 'running' OR lease_until <= $1)
         ORDER BY run_at, handler, key LIMIT 1 FOR UPDATE SKIP LOCKED
       )
       UPDATE ${this.s}.tasks t SET status = 'running', lease_token = $3::text || gen_random_uuid()::text, lease_until = $2, updated_at = $1
       FROM next WHERE t.handler = next.handler AND t.key = next.key RETURNING t.*`,
      values: [new Date(now), new Date(now + leaseMs), tokenOwner],
    });
    const row = rows[0];
    return row && { token: row.lease_token!, generation: row.generation, task: toTask(row) };
  }

  async finishTask(claim: ClaimedTask, decision: TaskDecision): Promise<void> {
    const { handler, key } = claim.task;
    const mine = "handler = $1 AND key = $2 AND lease_token = $3 AND generation = $4";
    if (decision.status === "done") {
      await this.pool.query(`DELETE FROM ${this.s}.tasks WHERE ${mine}`, [handler, key, claim.token, claim.generation]);
      return;
    }
    const retryAt = decision.status === "retry" ? decision.retryAt : null;
    await this.pool.query(
      `UPDATE ${this.s}.tasks SET status = $5, run_at = coalesce($6, run_at), attempts = attempts + 1, last_error = $7,
         lease_token = NULL, lease_until = NULL, updated_at = $8
       WHERE ${mine}`,
      [
        handler,
        key,
        claim.token,
        claim.generation,
        decision.status === "retry" ? "pending" : "dead",
        retryAt,
        decision.lastError,
        new Date(),
      ],
    );
  }

  async listTasks(): Promise<StoredTask[]> {
    const { rows } = await this.pool.query<TaskRow>(`SELECT * FROM ${this.s}.tasks ORDER BY run_at, handler, key`);
    return rows.map(toTask);
  }
}
