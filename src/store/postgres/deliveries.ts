// Deliveries in PostgreSQL: the intake's insert (the primary key is the dedup of delivery ids)
// and the leased queue with per-handler outcomes. The queue is a narrow table of its own (one row
// per delivery waiting or running): claims take due rows with FOR UPDATE SKIP LOCKED, so replicas
// claiming at once never lease the same delivery and never wait on each other, and they write
// that row alone; the delivery's row is written at intake and at its finish. Every later write
// names the lease token, so a run whose lease was taken back writes nothing.
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
import {
  deliveryColumns,
  outcomesJson,
  tokenOwner,
  toDelivery,
  toOutcomes,
  type DeliveryRow,
  type OutcomeJson,
} from "./rows.js";
import type { WorkSignal } from "./work-signal.js";
import { Batches } from "./batches.js";

/** Handler runs kept per delivery for `deliveries show` (a delivery retried forever stays bounded). */
const MAX_RUNS_KEPT = 200;
/** Deliveries one INSERT records at most (10 parameters each, far below PostgreSQL's 65 535). */
const MAX_BATCH = 200;
/** Deliveries one retention statement deletes at most: each batch is a short transaction. */
const PURGE_BATCH = 500;
/** Runs one finishing statement ends at most. */
const MAX_FINISH_BATCH = 50;

type ClaimedRow = DeliveryRow & { lease_token: string; outcomes: OutcomeJson[] };

/** A claimed delivery's columns, from `claimed c JOIN deliveries d`. */
const claimedColumnNames = [
  "id",
  "event",
  "action",
  "installation_id",
  "repository",
  "headers",
  "payload",
  "received_at",
  "status",
  "attempts",
  "next_run_at",
  "last_error",
  "updated_at",
  "lease_token",
  "outcomes",
] as const;

const claimedColumns = (s: string) =>
  `d.id, d.event, d.action, d.installation_id, d.repository, d.headers, d.payload, d.received_at,
   'running' AS status, c.attempts, c.run_at AS next_run_at, d.last_error, d.updated_at, c.lease_token,
   ${outcomesJson(s, "c.id")} AS outcomes`;

const toClaimed = (r: ClaimedRow): ClaimedDelivery => ({
  token: r.lease_token,
  delivery: toDelivery(r),
  outcomes: toOutcomes(r.outcomes),
});

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

interface PendingClaim {
  kind: "claim";
  leaseMs: number;
  max: number;
  resolve(claims: ClaimedDelivery[]): void;
  reject(error: unknown): void;
}

interface PendingFinish {
  kind: "finish";
  token: string;
  deliveryId: string;
  decision: DeliveryDecision;
  /** Its run's outcomes not written yet, one per handler: they go with it. */
  outcomes: UnsentOutcome[];
  resolve(finished: boolean): void;
  reject(error: unknown): void;
}

export class PostgresDeliveries implements DeliveriesPart {
  #closed = false;
  readonly #records = new Batches<PendingRecord>(
    MAX_BATCH,
    (batch) => this.#commitRecords(batch),
    () => this.#settled(),
  );
  // The worker's writes: finishes and claims asked for together go in one statement (see
  // claimDeliveries). Two turns: the engine claims for the slots of runs finishing in the first
  // one in the next, and that claim goes with their finishes.
  readonly #finishes = new Batches<PendingFinish | PendingClaim>(
    MAX_FINISH_BATCH,
    (batch) => this.#commitFinishes(batch),
    () => this.#settled(),
    2,
  );
  #drained: (() => void)[] = [];
  /** Outcome writes in flight, by the lease token they are written under. */
  readonly #outcomeWrites = new Map<string, Set<Promise<unknown>>>();
  /** Outcomes asked for in this turn, not sent yet, by lease token. */
  readonly #unsentOutcomes = new Map<string, UnsentOutcome[]>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly s: string,
    private readonly signal: WorkSignal,
    private readonly durability: "process" | "power",
  ) {}

  /**
   * Resolves once the row is committed: at durability `power` flushed to the server's WAL, at
   * `process` not waited for (see #insert). Deliveries arriving while a commit is under way wait
   * for it to end and then go in one multi-row INSERT, one transaction: one round trip, one
   * commit and one notice for the lot, each answered after that commit (see #commitRecords).
   */
  record(d: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    if (this.#closed) return Promise.reject(new Error("store is closed"));
    return new Promise((resolve, reject) => this.#records.add({ d, resolve, reject }));
  }

  /** Commits a batch of deliveries, each answered after that commit. */
  async #commitRecords(batch: PendingRecord[]): Promise<void> {
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

  #settled(): void {
    if (this.#records.busy || this.#finishes.busy) return;
    const drained = this.#drained;
    this.#drained = [];
    for (const done of drained) done();
  }

  /**
   * The ids of `ds` inserted now (the others were recorded before: the primary key dedups).
   * Other replicas (when the registry saw any alive) are notified in the same transaction when
   * one of them is queued work.
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
      return `(${$(1)}, ${$(2)}, ${$(3)}, ${$(4)}, ${$(5)}, ${$(6)}, ${$(7)}, ${$(8)}, ${$(9)}, ${$(10)})`;
    });
    // No other replica alive (the registry says): no notice, which only this replica would hear.
    const notice = this.signal.notice;
    const n = notice ? values.push(...notice) : values.length;
    // At durability `process` the commit does not wait for its WAL flush (`synchronous_commit`
    // off for this transaction alone): the row is committed and seen by every replica at once, and
    // the server flushes it within three `wal_writer_delay`s, or sooner with the next synchronous
    // commit (the worker's claims and finishes stay synchronous, decision 0021). Steward's crash or a
    // clean restart of the server loses nothing; the server's crash can lose what it had not flushed
    // (decision 0033). The setting is read at commit, after this statement ran.
    const unflushed = this.durability === "process";
    const woke = notice
      ? `, woke AS (
         SELECT pg_notify($${n - 1}, $${n}) FROM (SELECT FROM ins WHERE status = 'queued' LIMIT 1) queued
       )`
      : "";
    const { rows: inserted } = await this.pool.query<{ id: string | null }>({
      // One prepared statement per batch size and kind (at most 2 * MAX_BATCH of them per connection).
      name: `steward-record-${ds.length}${notice ? "" : "-alone"}${unflushed ? "-unflushed" : ""}`,
      text: `WITH ins AS (
         INSERT INTO ${this.s}.deliveries (id, event, action, installation_id, repository, headers, payload, received_at,
           status, updated_at)
         VALUES ${rows.join(", ")}
         ON CONFLICT (id) DO NOTHING RETURNING id, status, updated_at
       ), queued AS (
         INSERT INTO ${this.s}.queue (id, run_at) SELECT id, updated_at FROM ins WHERE status = 'queued'
         ON CONFLICT (id) DO NOTHING
       )${woke}
       SELECT id FROM ins${unflushed ? " CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) unflushed" : ""}${notice ? " UNION ALL SELECT NULL FROM woke" : ""}`,
      values,
    });
    return new Set(inserted.flatMap((r) => (r.id === null ? [] : [r.id])));
  }

  /** Records refused from here on (the store is closing); those already asked for are still committed. */
  markClosed(): void {
    this.#closed = true;
  }

  /** Resolves once every delivery and finish asked for is committed or refused. */
  drain(): Promise<void> {
    if (!this.#records.busy && !this.#finishes.busy) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  async depth(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${this.s}.queue`);
    return rows[0]!.n;
  }

  async oldestDueAt(): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ at: Date | null }>(
      `SELECT min(run_at) AS at FROM ${this.s}.queue WHERE lease_token IS NULL`,
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
    if (max <= 0) return [];
    // Claims are group-committed with the runs' finishes: one asked for in the turn runs finish
    // (the engine claims for the slots they free), or while the worker's previous write commits,
    // goes with the finishes waiting then: one transaction and one WAL flush for both.
    return new Promise((resolve, reject) => this.#finishes.add({ kind: "claim", leaseMs, max, resolve, reject }));
  }

  async #claim(leaseMs: number, max: number): Promise<ClaimedDelivery[]> {
    const values: unknown[] = [];
    const { rows } = await this.pool.query<ClaimedRow>({
      // Not a named (prepared) statement: planned at each claim for the tables as they are, see #finish.
      text: `WITH ${this.#claimSteps(values, leaseMs, max, "")} SELECT ${claimedColumns(this.s)} ${this.#claimedFrom} ORDER BY c.run_at, c.id`,
      values,
    });
    return rows.map(toClaimed);
  }

  /**
   * The claim as CTEs (`next`, `claimed`): up to `max` due queue rows leased, none of `exclude`'s
   * condition (the rows a statement finishes, which it would otherwise see due in its snapshot).
   */
  #claimSteps(values: unknown[], leaseMs: number, max: number, exclude: string): string {
    const now = Date.now();
    const n = values.push(new Date(now), new Date(now + leaseMs), Math.max(0, Math.floor(max)), tokenOwner);
    return `next AS (
         SELECT id FROM ${this.s}.queue
         WHERE run_at <= $${n - 3} AND (lease_token IS NULL OR lease_until <= $${n - 3}) ${exclude}
         ORDER BY run_at, id LIMIT $${n - 1} FOR UPDATE SKIP LOCKED
       ), claimed AS (
         UPDATE ${this.s}.queue q
         SET attempts = q.attempts + 1, lease_token = $${n}::text || gen_random_uuid()::text, lease_until = $${n - 2}
         FROM next WHERE q.id = next.id RETURNING q.*
       )`;
  }

  get #claimedFrom(): string {
    return `FROM claimed c JOIN ${this.s}.deliveries d ON d.id = c.id`;
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
         SELECT id FROM ${this.s}.queue WHERE id = $1 AND lease_token = $2 FOR UPDATE
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
    // Runs finishing meanwhile end together: one statement, one transaction and one WAL flush.
    return new Promise((resolve, reject) =>
      this.#finishes.add({ kind: "finish", token, deliveryId, decision, outcomes: unsent, resolve, reject }),
    );
  }

  async #commitFinishes(items: (PendingFinish | PendingClaim)[]): Promise<void> {
    const batch = items.filter((i) => i.kind === "finish");
    const asked = items.filter((i) => i.kind === "claim");
    // The batch's claims for one lease time as one, the rows leased handed out in the order they
    // were asked for; a claim for another lease time goes alone after.
    const claims = asked.filter((c) => c.leaseMs === asked[0]?.leaseMs);
    for (const c of asked) if (!claims.includes(c)) void this.#claim(c.leaseMs, c.max).then(c.resolve, c.reject);
    const claim = claims.length
      ? { leaseMs: claims[0]!.leaseMs, max: claims.reduce((n, c) => n + c.max, 0) }
      : undefined;
    const handOut = (leased: ClaimedDelivery[]) => {
      for (const c of claims) c.resolve(leased.splice(0, c.max));
    };
    /** The batch's claims in a statement of their own: no finishes to go with, or those refused. */
    const claimAlone = async () => {
      if (!claim) return;
      await this.#claim(claim.leaseMs, claim.max).then(handOut, (error: unknown) => {
        for (const c of claims) c.reject(error);
      });
    };
    if (!batch.length) return claimAlone();
    try {
      handOut(await this.#finish(batch, claim));
    } catch (error) {
      await claimAlone();
      // A statement the server refused: each finish goes alone, so one bad finish fails alone.
      const alone = batch.length > 1 && error instanceof pg.DatabaseError;
      await Promise.all(
        batch.map(async (f) => {
          try {
            if (!alone) throw error;
            await this.#finish([f], undefined);
          } catch (refused) {
            for (const o of f.outcomes) o.reject(refused);
            f.reject(refused);
          }
        }),
      );
    }
  }

  /**
   * Each run's queue row ends its lease (gone when the delivery is finished, due again at the
   * retry's time when it failed); its outcomes are upserted and added to the runs' history, and
   * the delivery's row takes its status and attempts, all only where the lease still holds.
   * `claim`'s deliveries are leased in the same statement and returned.
   */
  async #finish(
    batch: PendingFinish[],
    claim: { leaseMs: number; max: number } | undefined,
  ): Promise<ClaimedDelivery[]> {
    const values: unknown[] = [new Date()];
    const finishes = batch.map((f, i) => {
      const { decision } = f;
      const n = values.push(
        f.deliveryId,
        f.token,
        decision.status,
        decision.status === "done" ? null : decision.lastError,
        decision.status === "failed" ? decision.retryAt : null,
      );
      return `(${i}, $${n - 4}::text, $${n - 3}::text, $${n - 2}::text, $${n - 1}::text, $${n}::timestamptz)`;
    });
    let rank = 0;
    const outcomes = batch.flatMap((f, i) =>
      f.outcomes.map((o) => {
        const { status, detail, retryable } = outcomeRecord(o.outcome);
        const n = values.push(o.handler, status, detail ?? null, retryable, o.seconds);
        return `(${rank++}, ${i}, $${n - 4}::text, $${n - 3}::text, $${n - 2}::text, $${n - 1}::boolean, $${n}::double precision)`;
      }),
    );
    const outcomeSteps = outcomes.length
      ? `, h (rank, f, handler, status, detail, retryable, seconds) AS (
           SELECT * FROM (VALUES ${outcomes.join(", ")}) v
         ), o AS (
           INSERT INTO ${this.s}.outcomes AS o (delivery_id, handler, status, detail, retryable, attempts, seconds, updated_at)
           SELECT q.id, h.handler, h.status, h.detail, h.retryable, 1, h.seconds, $1::timestamptz FROM q JOIN h ON h.f = q.ord
           ORDER BY h.rank
           ON CONFLICT (delivery_id, handler) DO UPDATE SET status = excluded.status, detail = excluded.detail,
             retryable = excluded.retryable, attempts = o.attempts + 1, seconds = excluded.seconds, updated_at = excluded.updated_at
           RETURNING o.delivery_id, o.handler, o.attempts, o.status, o.detail
         ), r AS (
           INSERT INTO ${this.s}.runs (delivery_id, handler, attempt, status, detail, at)
           SELECT o.delivery_id, o.handler, o.attempts, o.status, o.detail, $1::timestamptz
           FROM o JOIN q ON q.id = o.delivery_id JOIN h ON h.f = q.ord AND h.handler = o.handler ORDER BY h.rank
         ), trimmed AS (
           DELETE FROM ${this.s}.runs x USING (SELECT DISTINCT delivery_id FROM o) t
           WHERE x.delivery_id = t.delivery_id AND x.seq <= (
             SELECT seq FROM ${this.s}.runs y WHERE y.delivery_id = t.delivery_id ORDER BY seq DESC OFFSET ${MAX_RUNS_KEPT - 1} LIMIT 1)
         )`
      : "";
    const claimSteps = claim
      ? `, ${this.#claimSteps(values, claim.leaseMs, claim.max, "AND id NOT IN (SELECT id FROM f)")}`
      : "";
    // The claimed deliveries follow the finishes' rows (ord NULL sorts last), their finish columns NULL.
    const claimed = claim ? `UNION ALL SELECT NULL, NULL, NULL, ${claimedColumns(this.s)} ${this.#claimedFrom}` : "";
    const { rows } = await this.pool.query<{ ord: number; finished: boolean; saved: number } & ClaimedRow>({
      // Not a named (prepared) statement. A prepared statement's generic plan, made once a
      // connection has run it five times, is kept until the next ANALYZE of its tables: one made
      // while they were nearly empty reads the whole deliveries, queue and runs tables to join
      // the batch's rows. Planned at each execution, the batch's rows are found by their keys
      // (decision 0016).
      text: `WITH f (ord, id, token, status, last_error, retry_at) AS (
         SELECT * FROM (VALUES ${finishes.join(", ")}) v
       ), gone AS (
         DELETE FROM ${this.s}.queue q USING f WHERE q.id = f.id AND q.lease_token = f.token AND f.retry_at IS NULL
         RETURNING f.ord, q.id, q.attempts
       ), kept AS (
         UPDATE ${this.s}.queue q SET run_at = f.retry_at, lease_token = NULL, lease_until = NULL
         FROM f WHERE q.id = f.id AND q.lease_token = f.token AND f.retry_at IS NOT NULL
         RETURNING f.ord, q.id, q.attempts
       ), q AS (
         SELECT * FROM gone UNION ALL SELECT * FROM kept
       )${outcomeSteps}, d AS (
         UPDATE ${this.s}.deliveries x SET status = f.status, attempts = q.attempts, last_error = f.last_error,
           updated_at = $1::timestamptz
         FROM q JOIN f ON f.ord = q.ord WHERE x.id = q.id RETURNING q.ord
       )${claimSteps}
       SELECT f.ord, EXISTS (SELECT 1 FROM d WHERE d.ord = f.ord) AS finished,
         ${outcomes.length ? "(SELECT count(*) FROM o JOIN q ON q.id = o.delivery_id WHERE q.ord = f.ord)::int" : "0"} AS saved
         ${claim ? `, ${claimedColumnNames.map((c) => `NULL AS ${c}`).join(", ")}` : ""}
       FROM f ${claimed} ORDER BY 1${claim ? ", next_run_at, id" : ""}`,
      values,
    });
    batch.forEach((f, i) => {
      const row = rows[i]!;
      const held = row.saved === f.outcomes.length;
      for (const o of f.outcomes) o.resolve(held);
      f.resolve(row.finished);
    });
    return rows.slice(batch.length).map(toClaimed);
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
      `SELECT ${deliveryColumns}, ${outcomesJson(this.s, "d.id")} AS outcomes,
         (SELECT coalesce(json_agg(json_build_object('handler', r.handler, 'attempt', r.attempt, 'status', r.status, 'detail', r.detail,
            'at', (extract(epoch FROM r.at) * 1000)::bigint) ORDER BY r.seq), '[]')
          FROM ${this.s}.runs r WHERE r.delivery_id = d.id) AS runs
       FROM ${this.s}.deliveries d LEFT JOIN ${this.s}.queue q ON q.id = d.id WHERE d.id = $1`,
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
      `SELECT * FROM (SELECT ${deliveryColumns} FROM ${this.s}.deliveries d LEFT JOIN ${this.s}.queue q ON q.id = d.id) d
       WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR event = $2) AND ($3::timestamptz IS NULL OR received_at >= $3)
       ORDER BY received_at DESC, id DESC LIMIT $4`,
      [filter.status ?? null, filter.event ?? null, filter.since ?? null, filter.limit ?? 100],
    );
    return rows.map(toDelivery);
  }

  async replayDelivery(id: string): Promise<boolean> {
    const now = new Date();
    // Its queue row locked first, so a claim at the same time either leased it before (and the
    // replay refuses) or finds it queued again.
    const { rows } = await this.pool.query<{ n: number }>(
      `WITH mine AS (
         SELECT lease_token FROM ${this.s}.queue WHERE id = $1 FOR UPDATE
       ), d AS (
         UPDATE ${this.s}.deliveries SET status = 'queued', attempts = 0, updated_at = $2, last_error = NULL
         WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM mine WHERE lease_token IS NOT NULL) RETURNING id
       ), q AS (
         INSERT INTO ${this.s}.queue (id, run_at) SELECT id, $2 FROM d
         ON CONFLICT (id) DO UPDATE SET run_at = excluded.run_at, attempts = 0
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
      if ((rowCount ?? 0) < PURGE_BATCH) break;
    }
    // Queue rows whose delivery was removed by hand: nothing would ever finish them.
    await this.pool.query(
      `DELETE FROM ${this.s}.queue q WHERE NOT EXISTS (SELECT 1 FROM ${this.s}.deliveries d WHERE d.id = q.id)`,
    );
    return total;
  }
}
