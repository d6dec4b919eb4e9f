// Which replicas of a deployment are alive and what each holds, kept in PostgreSQL for the
// operator (/metrics, the console) and for tests: every replica rewrites its row once a second,
// and one not seen for a few seconds (by the server's clock) is dead and dropped by the next
// heartbeat of any replica. The leases each holds are counted from the store's own rows, whose
// lease tokens name their process.
import type pg from "pg";
import type { Logger } from "pino";
import { PROCESS_OWNER } from "../../lifecycle/process-owner.js";
import {
  REPLICA_HEARTBEAT_MS,
  REPLICA_TIMEOUT_MS,
  type ReplicaEntry,
  type ReplicaHolds,
  type ReplicaRegistry,
} from "../replicas.js";

/** `n` milliseconds (an integer parameter or column) as an interval. */
const ms = (n: string) => `make_interval(secs => (${n})::integer / 1000.0)`;

/** The owner part (`host/pid`) of a lease token or replica id, in SQL. */
const ownerOf = (column: string) => `split_part(${column}, '/', 1) || '/' || split_part(${column}, '/', 2)`;

export function startPostgresReplicaRegistry(opts: {
  pool: pg.Pool;
  /** Quoted schema name. */
  s: string;
  holds(): ReplicaHolds;
  logger?: Logger;
  id?: string;
  now?: () => number;
  /**
   * After each heartbeat: whether another replica is alive (seen within REPLICA_TIMEOUT_MS),
   * undefined when the heartbeat failed or the registry stopped. The store's wake-ups are
   * sent only while some other replica may hear them (store/postgres/work-signal.ts).
   */
  onOthers?(alive: boolean | undefined): void;
}): ReplicaRegistry {
  const { pool, s } = opts;
  const now = opts.now ?? Date.now;
  const id = opts.id ?? PROCESS_OWNER;
  const startedAt = now();
  let lastWarned = 0;
  let beating: Promise<void> | undefined;
  let stopped = false;
  const sql = {
    // Stale rows of others go with each heartbeat (never this replica's own: one statement touches a row once),
    // and the others still alive are counted.
    beat: `WITH gone AS (DELETE FROM ${s}.replicas WHERE seen_at < clock_timestamp() - ${ms("$3")} AND id <> $1),
      others AS (SELECT count(*)::integer AS n FROM ${s}.replicas WHERE seen_at >= clock_timestamp() - ${ms("$3")} AND id <> $1)
      INSERT INTO ${s}.replicas (id, entry, seen_at) VALUES ($1, $2, clock_timestamp())
      ON CONFLICT (id) DO UPDATE SET entry = excluded.entry, seen_at = excluded.seen_at
      RETURNING (SELECT n FROM others) AS others`,
    alive: `SELECT entry FROM ${s}.replicas WHERE seen_at > clock_timestamp() - ${ms("$1")} ORDER BY id`,
    leases: `SELECT ${ownerOf("lease_token")} AS owner, 'd' AS kind, count(*)::integer AS n
        FROM ${s}.queue WHERE lease_token IS NOT NULL GROUP BY 1
      UNION ALL
      SELECT ${ownerOf("lease_token")}, 't', count(*)::integer
        FROM ${s}.tasks WHERE status = 'running' AND lease_token IS NOT NULL GROUP BY 1`,
    leave: `DELETE FROM ${s}.replicas WHERE id = $1`,
  };

  async function beat(): Promise<void> {
    const entry = { id, pid: process.pid, startedAt, seenAt: now(), ...opts.holds() };
    const { rows } = await pool.query<{ others: number }>(sql.beat, [id, JSON.stringify(entry), REPLICA_TIMEOUT_MS]);
    if (!stopped) opts.onOthers?.(rows[0]!.others > 0);
  }
  const tick = () =>
    (beating ??= beat()
      .catch((e: unknown) => {
        if (!stopped) opts.onOthers?.(undefined);
        if (now() - lastWarned < 5_000) return;
        lastWarned = now();
        opts.logger?.warn({ err: { message: (e as Error).message } }, "replica registry: heartbeat failed");
      })
      .finally(() => (beating = undefined)));
  void tick();
  const timer = setInterval(tick, REPLICA_HEARTBEAT_MS);
  timer.unref();

  return {
    async alive() {
      const [entries, leases] = await Promise.all([
        pool.query<{ entry: string }>(sql.alive, [REPLICA_TIMEOUT_MS]),
        pool.query<{ owner: string; kind: "d" | "t"; n: number }>(sql.leases),
      ]);
      const held = new Map<string, { d: number; t: number }>();
      for (const row of leases.rows) {
        const counts = held.get(row.owner) ?? { d: 0, t: 0 };
        counts[row.kind] += row.n;
        held.set(row.owner, counts);
      }
      return entries.rows.map((row) => {
        const entry = JSON.parse(row.entry) as Omit<ReplicaEntry, "deliveryLeases" | "taskLeases">;
        const counts = held.get(entry.id.split("/").slice(0, 2).join("/")) ?? { d: 0, t: 0 };
        return { ...entry, deliveryLeases: counts.d, taskLeases: counts.t };
      });
    },
    async stop() {
      clearInterval(timer);
      stopped = true;
      opts.onOthers?.(undefined);
      // A heartbeat still in flight would write the row back after it was removed.
      await beating;
      await pool.query(sql.leave, [id]);
    },
  };
}
