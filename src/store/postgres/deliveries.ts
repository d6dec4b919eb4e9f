// Deliveries in PostgreSQL: the intake's insert (the primary key is the dedup of delivery ids)
// and the leased queue with per-handler outcomes. Claims take due rows with FOR UPDATE SKIP
// LOCKED, so replicas claiming at once never lease the same delivery and never wait on each
// other; every later write names the lease token, so a run whose lease was taken back writes nothing.
import pg from "pg";
import type {
  AttemptRecord,
  ClaimedDelivery,
  DeliveryDecision,
  DeliveryFilter,
  DeliveryRecord,
  IncomingDelivery,
  Outcome,
  StoredDelivery,
} from "../records.js";
import type { DeliveriesPart } from "../contract.js";
import { keptHeaders, outcomeRecord } from "../recorded.js";
import { outcomesJson, tokenOwner, toDelivery, toOutcomes, type DeliveryRow, type OutcomeJson } from "./rows.js";
import type { WorkSignal } from "./work-signal.js";

/** Handler runs kept per delivery for `deliveries show` (a delivery retried forever stays bounded). */
const MAX_RUNS_KEPT = 200;
/** Deliveries one INSERT records at most (10 parameters each, far below PostgreSQL's 65 535). */
const MAX_BATCH = 200;
/** Deliveries one retention statement deletes at most: each batch is a short transaction. */
const PURGE_BATCH = 500;

interface PendingRecord {
  d: IncomingDelivery;
  resolve(result: "recorded" | "duplicate"): void;
  reject(error: unknown): void;
}

interface UnsentOutcome {
  deliveryId: string;
  handler: string;
  outcome: Outcome;
  seconds: number;
  resolve(held: boolean): void;
  reject(error: unknown): void;
}

export class PostgresDeliveries implements DeliveriesPart {
  #closed = false;
  #pending: PendingRecord[] = [];
  /** A batch is being committed, or one is about to start. */
  #flushing = false;
  #drained: (() => void)[] = [];
  /** Outcome writes in flight, by the lease token they are written under. */
  readonly #outcomeWrites = new Map<string, Set<Promise<unknown>>>();
  /** Outcomes asked for in this turn, not sent yet, by lease token. */
  readonly #unsentOutcomes = new Map<string, UnsentOutcome[]>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly s: string,
    private readonly signal: WorkSignal,
  ) {}

  /**
   * Resolves once the row is committed (with synchronous_commit on, flushed to the server's WAL).
   * Deliveries arriving while a commit is under way wait for it to end and then go in one
   * multi-row INSERT, one transaction: one round trip, one WAL flush and one notice for the
   * lot, each answered after that commit (see #flush).
   */
  record(d: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    if (this.#closed) return Promise.reject(new Error("store is closed"));
    return new Promise((resolve, reject) => {
      this.#pending.push({ d, resolve, reject });
      if (!this.#flushing) {
        this.#flushing = true;
        // The deliveries of this turn of the event loop join the first one.
        setImmediate(() => void this.#flush());
      }
    });
  }

  /** Commits the waiting deliveries batch by batch, until none waits. One batch in flight at a time. */
  async #flush(): Promise<void> {
    while (this.#pending.length) {
      const batch = this.#pending.splice(0, MAX_BATCH);
      let inserted: Set<string>;
      const failed = new Set<PendingRecord>();
      try {
        inserted = await this.#insert(batch.map((p) => p.d));
      } catch (error) {
        // One bad delivery fails the statement the server refused: each then goes alone, so it
        // rejects alone. A database not reached fails them all at once (each answered 503).
        inserted = new Set();
        const alone = batch.length > 1 && error instanceof pg.DatabaseError;
        await Promise.all(
          batch.map(async (p) => {
            try {
              if (!alone) throw error;
              for (const id of await this.#insert([p.d])) inserted.add(id);
            } catch (refused) {
              failed.add(p);
              p.reject(refused);
            }
          }),
        );
      }
      for (const p of batch) {
        if (failed.has(p)) continue;
        // A delivery id twice in one batch: the first is recorded, the next a duplicate.
        p.resolve(inserted.delete(p.d.id) ? "recorded" : "duplicate");
      }
    }
    this.#flushing = false;
    const drained = this.#drained;
    this.#drained = [];
    for (const done of drained) done();
  }

  /**
   * The ids of `ds` inserted now (the others were recorded before: the primary key dedups).
   * Other replicas are notified in the same transaction when one of them is queued work.
   */
  async #insert(ds: IncomingDelivery[]): Promise<Set<string>> {
    const now = new Date();
    const values: unknown[] = [];
    const rows = ds.map((d) => {
      const n = values.push(
        d.id,
        d.event,
        d.action ?? null,
        d.installationId ?? null,
        d.repository ?? null,
        JSON.stringify(keptHeaders(d.headers)),
        d.payload,
        d.receivedAt,
        d.settled ? "done" : "queued",
        now,
      );
      const $ = (i: number) => `$${n - 10 + i}`;
      return `(${$(1)}, ${$(2)}, ${$(3)}, ${$(4)}, ${$(5)}, ${$(6)}, ${$(7)}, ${$(8)}, ${$(9)}, ${$(10)}, ${$(10)})`;
    });
    const n = values.push(...this.signal.notice);
    const { rows: inserted } = await this.pool.query<{ id: string | null }>({
      // One prepared statement per batch size (at most MAX_BATCH of them per connection).
      name: `steward-record-${ds.length}`,
      text: `WITH ins AS (
         INSERT INTO ${this.s}.deliveries (id, event, action, installation_id, repository, headers, payload, received_at,
           status, next_run_at, updated_at)
         VALUES ${rows.join(", ")}
         ON CONFLICT (id) DO NOTHING RETURNING id, status
       ), woke AS (
         SELECT pg_notify($${n - 1}, $${n}) FROM (SELECT FROM ins WHERE status = 'queued' LIMIT 1) queued
       )
       SELECT id FROM ins UNION ALL SELECT NULL FROM woke`,
      values,
    });
    return new Set(inserted.flatMap((r) => (r.id === null ? [] : [r.id])));
  }

  /** Records refused from here on (the store is closing); those already asked for are still committed. */
  markClosed(): void {
    this.#closed = true;
  }

  /** Resolves once every delivery asked for is committed or refused. */
  drain(): Promise<void> {
    if (!this.#flushing) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  async depth(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.s}.deliveries WHERE status IN ('queued', 'failed', 'running')`,
    );
    return rows[0]!.n;
  }

  async oldestDueAt(): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ at: Date | null }>(
      `SELECT min(next_run_at) AS at FROM ${this.s}.deliveries WHERE status IN ('queued', 'failed')`,
    );
    return rows[0]!.at ?? undefined;
  }

  async claimDelivery(leaseMs: number): Promise<ClaimedDelivery | undefined> {
    return (await this.claimDeliveries(leaseMs, 1))[0];
  }

  /**
   * Up to `max` due deliveries, earliest due first: queued ones, retries whose time came, and
   * running ones whose lease expired (their replica stopped renewing), each counting an attempt.
   */
  async claimDeliveries(leaseMs: number, max: number): Promise<ClaimedDelivery[]> {
    const now = Date.now();
    const { rows } = await this.pool.query<DeliveryRow & { outcomes: OutcomeJson[] }>({
      name: "steward-claim-deliveries",
      text: `WITH next AS (
         SELECT id FROM ${this.s}.deliveries
         WHERE status IN ('queued', 'failed', 'running') AND next_run_at <= $1 AND (status <> 'running' OR lease_until <= $1)
         ORDER BY next_run_at, id LIMIT $3 FOR UPDATE SKIP LOCKED
       ), claimed AS (
         UPDATE ${this.s}.deliveries d
         SET status = 'running', attempts = d.attempts + 1, lease_token = $4::text || gen_random_uuid()::text, lease_until = $2, updated_at = $1
         FROM next WHERE d.id = next.id RETURNING d.*
       )
       SELECT c.*, ${outcomesJson(this.s, "c.id")} AS outcomes FROM claimed c ORDER BY c.next_run_at, c.id`,
      values: [new Date(now), new Date(now + leaseMs), Math.max(0, Math.floor(max)), tokenOwner],
    });
    return rows.map((r) => ({ token: r.lease_token!, delivery: toDelivery(r), outcomes: toOutcomes(r.outcomes) }));
  }

  /**
   * The engine asks for a run's finish without waiting for its outcome writes (on SQLite they
   * share a group commit, in order). Here an outcome waits for the end of the turn: when the
   * run's finish is asked for meanwhile, both go in one statement (see finishDelivery);
   * otherwise the outcome is written alone.
   */
  recordOutcome(
    token: string,
    deliveryId: string,
    handler: string,
    outcome: Outcome,
    seconds: number,
  ): Promise<boolean> {
    return new Promise((resolve, reject) => {
      let unsent = this.#unsentOutcomes.get(token);
      if (!unsent) {
        const list: UnsentOutcome[] = [];
        unsent = list;
        this.#unsentOutcomes.set(token, list);
        setImmediate(() => {
          // Taken by the finish meanwhile: nothing left to send here.
          if (this.#unsentOutcomes.get(token) !== list) return;
          this.#unsentOutcomes.delete(token);
          this.#sendOutcomes(token, list);
        });
      }
      unsent.push({ deliveryId, handler, outcome, seconds, resolve, reject });
    });
  }

  /** Each outcome written alone, tracked until written: a finish asked for later waits for them. */
  #sendOutcomes(token: string, list: UnsentOutcome[]): void {
    const writes = this.#outcomeWrites.get(token) ?? new Set<Promise<unknown>>();
    this.#outcomeWrites.set(token, writes);
    for (const o of list) {
      const write = this.#recordOutcome(token, o.deliveryId, o.handler, o.outcome, o.seconds);
      writes.add(write);
      const settled = () => {
        writes.delete(write);
        if (writes.size === 0 && this.#outcomeWrites.get(token) === writes) this.#outcomeWrites.delete(token);
      };
      write.then(settled, settled);
      write.then(o.resolve, o.reject);
    }
  }

  async #recordOutcome(
    token: string,
    deliveryId: string,
    handler: string,
    outcome: Outcome,
    seconds: number,
  ): Promise<boolean> {
    const { status, detail, retryable } = outcomeRecord(outcome);
    // The run's row locked by its lease, the outcome upserted with its attempt counted, the run
    // added to the history and the history trimmed: one statement, so nothing half-written.
    const { rows } = await this.pool.query<{ n: number }>({
      name: "steward-record-outcome",
      text: `WITH d AS (
         SELECT id FROM ${this.s}.deliveries WHERE id = $1 AND status = 'running' AND lease_token = $2 FOR UPDATE
       ), o AS (
         INSERT INTO ${this.s}.outcomes AS o (delivery_id, handler, status, detail, retryable, attempts, seconds, updated_at)
         SELECT d.id, $3, $4, $5, $6, 1, $7, $8 FROM d
         ON CONFLICT (delivery_id, handler) DO UPDATE SET status = excluded.status, detail = excluded.detail,
           retryable = excluded.retryable, attempts = o.attempts + 1, seconds = excluded.seconds, updated_at = excluded.updated_at
         RETURNING o.attempts
       ), r AS (
         INSERT INTO ${this.s}.runs (delivery_id, handler, attempt, status, detail, at) SELECT $1, $3, o.attempts, $4, $5, $8 FROM o
       ), trimmed AS (
         DELETE FROM ${this.s}.runs WHERE EXISTS (SELECT 1 FROM o) AND delivery_id = $1 AND seq <= (
           SELECT seq FROM ${this.s}.runs WHERE delivery_id = $1 ORDER BY seq DESC OFFSET ${MAX_RUNS_KEPT - 1} LIMIT 1)
       )
       SELECT count(*)::int AS n FROM o`,
      values: [deliveryId, token, handler, status, detail ?? null, retryable, seconds, new Date()],
    });
    return rows[0]!.n === 1;
  }

  /**
   * Ends the run. Its outcomes not yet sent go with it, in one statement: the outcomes upserted,
   * the runs added to the history and the row finished under the same lease (a lease lost saves
   * none of them). Outcome writes already sent are waited for first: run after them, the finish
   * would end the lease they are written under, and they would save nothing.
   */
  async finishDelivery(token: string, deliveryId: string, decision: DeliveryDecision): Promise<boolean> {
    let unsent = this.#unsentOutcomes.get(token) ?? [];
    this.#unsentOutcomes.delete(token);
    const handlers = new Set(unsent.map((o) => o.handler));
    if (unsent.some((o) => o.deliveryId !== deliveryId) || handlers.size !== unsent.length) {
      // Not this run's outcomes alone, or one handler twice: each written alone, as asked.
      this.#sendOutcomes(token, unsent);
      unsent = [];
    }
    const writes = this.#outcomeWrites.get(token);
    if (writes) await Promise.allSettled([...writes]);
    const now = new Date();
    const nextRunAt = decision.status === "failed" ? decision.retryAt : now;
    const lastError = decision.status === "done" ? null : decision.lastError;
    const values: unknown[] = [deliveryId, token, decision.status, nextRunAt, lastError, now];
    if (unsent.length === 0) {
      const { rowCount } = await this.pool.query({
        name: "steward-finish-delivery",
        text: `UPDATE ${this.s}.deliveries SET status = $3, next_run_at = $4, last_error = $5, updated_at = $6, lease_token = NULL, lease_until = NULL
         WHERE id = $1 AND lease_token = $2`,
        values,
      });
      return rowCount === 1;
    }
    const rows = unsent.map((o, i) => {
      const { status, detail, retryable } = outcomeRecord(o.outcome);
      const n = values.push(o.handler, status, detail ?? null, retryable, o.seconds);
      return `(${i}, $${n - 4}::text, $${n - 3}::text, $${n - 2}::text, $${n - 1}::boolean, $${n}::double precision)`;
    });
    try {
      const { rows: counts } = await this.pool.query<{ outcomes: number; finished: number }>({
        name: `steward-finish-delivery-${unsent.length}`,
        text: `WITH d AS (
           SELECT id FROM ${this.s}.deliveries WHERE id = $1::text AND status = 'running' AND lease_token = $2::text FOR UPDATE
         ), h (ord, handler, status, detail, retryable, seconds) AS (
           VALUES ${rows.join(", ")}
         ), o AS (
           INSERT INTO ${this.s}.outcomes AS o (delivery_id, handler, status, detail, retryable, attempts, seconds, updated_at)
           SELECT d.id, h.handler, h.status, h.detail, h.retryable, 1, h.seconds, $6::timestamptz FROM d, h ORDER BY h.ord
           ON CONFLICT (delivery_id, handler) DO UPDATE SET status = excluded.status, detail = excluded.detail,
             retryable = excluded.retryable, attempts = o.attempts + 1, seconds = excluded.seconds, updated_at = excluded.updated_at
           RETURNING o.handler, o.attempts, o.status, o.detail
         ), r AS (
           INSERT INTO ${this.s}.runs (delivery_id, handler, attempt, status, detail, at)
           SELECT $1::text, o.handler, o.attempts, o.status, o.detail, $6::timestamptz FROM o JOIN h USING (handler) ORDER BY h.ord
         ), trimmed AS (
           DELETE FROM ${this.s}.runs WHERE EXISTS (SELECT 1 FROM o) AND delivery_id = $1::text AND seq <= (
             SELECT seq FROM ${this.s}.runs WHERE delivery_id = $1::text ORDER BY seq DESC OFFSET ${MAX_RUNS_KEPT - 1} LIMIT 1)
         ), f AS (
           UPDATE ${this.s}.deliveries x SET status = $3::text, next_run_at = $4::timestamptz, last_error = $5::text,
             updated_at = $6::timestamptz, lease_token = NULL, lease_until = NULL
           FROM d WHERE x.id = d.id RETURNING x.id
         )
         SELECT (SELECT count(*) FROM o)::int AS outcomes, (SELECT count(*) FROM f)::int AS finished`,
        values,
      });
      const held = counts[0]!.outcomes === unsent.length;
      for (const o of unsent) o.resolve(held);
      return counts[0]!.finished === 1;
    } catch (error) {
      for (const o of unsent) o.reject(error);
      throw error;
    }
  }

  async getDelivery(id: string): Promise<DeliveryRecord | undefined> {
    const { rows } = await this.pool.query<
      DeliveryRow & {
        outcomes: OutcomeJson[];
        runs: {
          handler: string;
          attempt: number;
          status: AttemptRecord["status"];
          detail: string | null;
          at: number;
        }[];
      }
    >(
      `SELECT d.*, ${outcomesJson(this.s, "d.id")} AS outcomes,
         (SELECT coalesce(json_agg(json_build_object('handler', r.handler, 'attempt', r.attempt, 'status', r.status, 'detail', r.detail,
            'at', (extract(epoch FROM r.at) * 1000)::bigint) ORDER BY r.seq), '[]')
          FROM ${this.s}.runs r WHERE r.delivery_id = d.id) AS runs
       FROM ${this.s}.deliveries d WHERE d.id = $1`,
      [id],
    );
    const row = rows[0];
    if (!row) return undefined;
    return {
      delivery: toDelivery(row),
      outcomes: toOutcomes(row.outcomes),
      attempts: row.runs.map((r) => ({
        handler: r.handler,
        attempt: r.attempt,
        status: r.status,
        detail: r.detail ?? undefined,
        at: new Date(r.at),
      })),
    };
  }

  /** Newest first, filtered. */
  async listDeliveries(filter: DeliveryFilter = {}): Promise<StoredDelivery[]> {
    const { rows } = await this.pool.query<DeliveryRow>(
      `SELECT * FROM ${this.s}.deliveries
       WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR event = $2) AND ($3::timestamptz IS NULL OR received_at >= $3)
       ORDER BY received_at DESC, id DESC LIMIT $4`,
      [filter.status ?? null, filter.event ?? null, filter.since ?? null, filter.limit ?? 100],
    );
    return rows.map(toDelivery);
  }

  async replayDelivery(id: string): Promise<boolean> {
    const now = new Date();
    const { rows } = await this.pool.query<{ n: number }>(
      `WITH d AS (
         UPDATE ${this.s}.deliveries SET status = 'queued', attempts = 0, next_run_at = $2, updated_at = $2, last_error = NULL
         WHERE id = $1 AND status <> 'running' RETURNING id
       ), o AS (
         DELETE FROM ${this.s}.outcomes WHERE delivery_id IN (SELECT id FROM d)
       )
       SELECT count(*)::int AS n FROM d`,
      [id, now],
    );
    const replayed = rows[0]!.n === 1;
    if (replayed) this.signal.notify();
    return replayed;
  }

  /** In batches, each a short transaction that skips rows another one holds: retention never stalls the queue. */
  async purgeFinished(before: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const { rowCount } = await this.pool.query(
        `DELETE FROM ${this.s}.deliveries WHERE id IN (
           SELECT id FROM ${this.s}.deliveries WHERE status = 'done' AND updated_at < $1
           ORDER BY updated_at LIMIT ${PURGE_BATCH} FOR UPDATE SKIP LOCKED)`,
        [before],
      );
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < PURGE_BATCH) return total;
    }
  }
}
