// Deliveries in SQLite: the durable intake and the leased delivery queue with per-handler
// outcomes. Every write goes through one group commit (one transaction per turn of the event
// loop): intake inserts, outcomes, finishes, and claims, which lease a batch at a time.
import type { Database, Statement } from "better-sqlite3";
import type { Outcome } from "../records.js";
import type { IncomingDelivery } from "../records.js";
import type {
  ClaimedDelivery,
  DeliveryDecision,
  DeliveryFilter,
  DeliveryRecord,
  DeliveryStatus,
  HandlerOutcomeRecord,
  StoredDelivery,
} from "../records.js";
import { leaseOwnerDead, newLeaseToken } from "../../lifecycle/process-owner.js";
import { GroupCommit } from "./group-commit.js";
import type { StoreThread } from "./store-thread.js";
import type { DeliveriesPart } from "../contract.js";
import { keptHeaders, outcomeRecord } from "../recorded.js";
import { DEFAULT_MAX_UNMOVED, frameHead, framesInLog, framesInRing, removeRing, type LogPosition, type SpooledDelivery, type SpoolSettings } from "./spool.js";
import { PayloadLog, type Collected, type PayloadRef } from "./payload-log.js";
import { IdFilter } from "./id-filter.js";
import { inBatches } from "./in-batches.js";
import { writeTransaction } from "./write-transaction.js";
import { probeFileWrite } from "./record-probe.js";

/**
 * How long spooled deliveries wait to be moved into the store together. Nobody waits for a move:
 * a delivery no handler takes is settled, and during a flood a queued one has a backlog ahead of
 * it. A larger batch shares more index pages and one commit, but what waits for its move longer
 * outlives young-generation collections: 25 ms raised peak RSS by about 10 MB and was no faster.
 * Against 5 ms, A/B: 1.10x / 1.08x / 1.06x at 1 / 10 / 50 connections (analysis.md, stop 40).
 */
const MOVE_MS = 10;
/**
 * As MOVE_MS, when deliveries arrive one at a time and the store's thread makes the move: nobody
 * waits for it then either, and each move writes the tables' and indexes' last pages again on the
 * thread, which shares the second core with whoever sends the deliveries. At one connection,
 * moves every 50 ms and checkpoints once a second (store-thread.ts) took the thread's CPU from
 * 0.93-1.01 s to 0.45-0.60 s over an 8 s level (analysis.md, stop 50). During a flood the moves
 * are made here, by the group commit, and stay short (MOVE_MS).
 */
const THREAD_MOVE_MS = 50;
/** A queued delivery due within this long keeps its payload's pages cached (PayloadLog.holdPagesFrom). */
const HOLD_DUE_WITHIN_MS = 60_000;
/** How long the spool is left alone after its file could not be written. */
const SPOOL_REST_MS = 60_000;
/** The kv row canRecord writes and deletes in the same commit: a key no handler or housekeeping uses (it starts with NUL). */
const PROBE_KEY = "\u0000steward:record-probe";
/** About a delivery's row and headers. */
const PROBE_ROW_BYTES = 512;
/** How long a move that failed (the disk full, say) waits before it tries again; the spool holds them meanwhile. */
const MOVE_RETRY_MS = 1_000;

export interface QueueRow {
  id: string;
  event: string;
  action: string | null;
  installation_id: number | null;
  repository: string | null;
  received_at: number;
  status: DeliveryStatus;
  attempts: number;
  next_run_at: number;
  lease_token: string | null;
  last_error: string | null;
  updated_at: number;
  /** The body's place when it is in this row (schema 10 on, payload log on); NULL when it is in delivery_bodies. */
  headers: string | null;
  payload_file: string | null;
  payload_offset: number | null;
  payload_length: number | null;
}

interface BodyRow {
  headers: string;
  /** Empty when the payload is in the payload log (payload_file set); NULL when there is no body row (the body is in the queue row). */
  payload: string | null;
  payload_file: string | null;
  payload_offset: number | null;
  payload_length: number | null;
}

type DeliveryRow = Omit<QueueRow, keyof BodyRow> & BodyRow;

interface OutcomeRow {
  handler: string;
  status: Outcome["status"];
  detail: string | null;
  retryable: number;
  attempts: number;
  seconds: number;
  updated_at: number;
}


// A body is in the queue row (schema 10 on) or, for older rows and inline payloads, in delivery_bodies.
const bodyColumns =
  "COALESCE(d.headers, b.headers) AS headers, b.payload AS payload, COALESCE(d.payload_file, b.payload_file) AS payload_file, " +
  "COALESCE(d.payload_offset, b.payload_offset) AS payload_offset, COALESCE(d.payload_length, b.payload_length) AS payload_length";
const withBody = `SELECT d.*, ${bodyColumns} FROM deliveries d LEFT JOIN delivery_bodies b ON b.id = d.id`;

/** A delivery into the queue, its body in the row (the payload's place in the log), or nothing when its id is there. */
export const INSERT_QUEUED_SQL = `INSERT OR IGNORE INTO deliveries
   (id, event, action, installation_id, repository, received_at, status, attempts, next_run_at, updated_at, headers, payload_file, payload_offset, payload_length)
 VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)`;
/**
 * One batch of the purge of finished deliveries: those finished before the cutoff. Read through the
 * receipt index (a delivery finished before the cutoff was received before it), so a batch reads
 * only the rows received before the cutoff, not the table from its start: the last batch of a
 * purge, finding nothing left, would otherwise read every row kept, on the event loop. No index is
 * added to the intake's hot path for it.
 */
export const PURGE_FINISHED_SQL = "SELECT id FROM deliveries WHERE received_at < ? AND status = 'done' AND updated_at < ? ORDER BY received_at LIMIT ?";
/**
 * The highest spool frame number in the tables, and where in the payload log the frame ends
 * (spool.ts): recovery reads the log from there and moves only frames numbered above it. A batch
 * moved again (its first move's answer lost) never lowers either.
 */
export const SET_MOVED_SEQ_SQL = `INSERT INTO spool_moved (id, seq, log_file, log_offset) VALUES (1, ?, ?, ?)
  ON CONFLICT (id) DO UPDATE SET
    log_file = CASE WHEN excluded.seq >= seq THEN excluded.log_file ELSE log_file END,
    log_offset = CASE WHEN excluded.seq >= seq THEN excluded.log_offset ELSE log_offset END,
    seq = max(seq, excluded.seq)`;

// Row values are built as one array a row and bound as it is (no spread into arguments): every
// delivery the intake takes is inserted through these, and each intermediate array was garbage
// the young generation had to make room for.

/** The first values of an inserted queue row, as both inserts list their columns; the caller pushes the rest. */
function routedValues(d: IncomingDelivery): unknown[] {
  return [d.id, d.event, d.action ?? null, d.installationId ?? null, d.repository ?? null, d.receivedAt.getTime()];
}

/** INSERT_QUEUED_SQL's values with the body's four as null (filled in by `withLoggedBody`): queued, or done when no handler takes it. */
function queuedValues(d: IncomingDelivery, now: number): unknown[] {
  const row = routedValues(d);
  row.push(d.settled ? "done" : "queued", now, now, null, null, null, null);
  return row;
}

/** `row` (ending in the body's four) with the body of a payload in the log at `ref`. */
function withLoggedBody(row: unknown[], headers: Record<string, string>, ref: PayloadRef): unknown[] {
  const at = row.length - 4;
  row[at] = JSON.stringify(headers);
  row[at + 1] = ref.file;
  row[at + 2] = ref.offset;
  row[at + 3] = ref.length;
  return row;
}

/** `payload`: the row's, read from the payload log when it is there. */
function toDelivery(r: Omit<QueueRow, "headers"> & { headers: string }, payload: string): StoredDelivery {
  return {
    id: r.id,
    event: r.event,
    action: r.action ?? undefined,
    installationId: r.installation_id ?? undefined,
    repository: r.repository ?? undefined,
    headers: JSON.parse(r.headers) as Record<string, string>,
    payload,
    receivedAt: new Date(r.received_at),
    status: r.status,
    attempts: r.attempts,
    nextRunAt: new Date(r.next_run_at),
    lastError: r.last_error ?? undefined,
    updatedAt: new Date(r.updated_at),
  };
}

/**
 * `d` with its payload read from the log when something reads it, each time, and not kept. Most
 * runs never read it: their handlers decide from the event, the action, the repository and the
 * policy (in the bench's traffic seven runs in ten), and a read is a system call and a 2-25 KB
 * string each. A run reads it once and keeps the parse (delivery.ts): a text kept with the record
 * for the run's length outlived a collection or two, and with eight runs at once that made most of
 * the young generation's survivors (analysis.md, stop 40). A value assigned is kept. A claimed
 * delivery's row is leased, so its payload's file is not collected meanwhile.
 */
function readLater(d: StoredDelivery, read: () => string): StoredDelivery {
  let text: string | undefined;
  return Object.defineProperty(d, "payload", {
    enumerable: true,
    configurable: true,
    get: () => text ?? read(),
    set: (value: string) => void (text = value),
  });
}

/** Handler runs `deliveries show` keeps per delivery (a delivery retried forever stays bounded). */
const MAX_ATTEMPTS_SHOWN = 200;

interface AttemptRow {
  handler: string;
  attempt: number;
  status: Outcome["status"];
  detail: string | null;
  at: number;
}

function toOutcome(r: OutcomeRow): HandlerOutcomeRecord {
  return {
    handler: r.handler,
    status: r.status,
    detail: r.detail ?? undefined,
    retryable: r.retryable === 1,
    attempts: r.attempts,
    seconds: r.seconds,
    updatedAt: new Date(r.updated_at),
  };
}

export class SqliteDeliveries implements DeliveriesPart {
  readonly #writes: GroupCommit;
  #closed = false;
  readonly #insert: Statement;
  readonly #insertBody: Statement;
  readonly #readyIds: Statement;
  readonly #probeRow: Statement;
  readonly #probeRowGone: Statement;
  readonly #expiredIds: Statement;
  readonly #anyDue: Statement;
  readonly #orphans: Statement;
  readonly #lease: Statement;
  readonly #body: Statement;
  readonly #byId: Statement;
  readonly #outcomesOf: Statement;
  readonly #logPrevious: Statement;
  readonly #logAllPrevious: Statement;
  readonly #attemptsOf: Statement;
  readonly #holds: Statement;
  readonly #upsertOutcome: Statement;
  readonly #finish: Statement;
  readonly #depth: Statement;
  readonly #nextDue: Statement;
  readonly #exists: Statement;
  readonly #moveMark: Statement;
  readonly #setMovedSeq: Statement;
  /** Spooled and not yet in the tables: ids (duplicates, depth) and the deliveries, oldest first, waiting for a move. */
  readonly #unmoved = new Set<string>();
  #toMove: SpooledDelivery[] = [];
  #seq = 0;
  #moveTimer: NodeJS.Timeout | undefined;
  /** When `#moveTimer` fires (ms since the epoch). */
  #moveAt = 0;
  /** Deliveries recorded since the last commit began, their payloads not yet appended (#appendTurn). */
  #toAppend: IncomingDelivery[] = [];
  /** Where #appendTurn put each payload, for the delivery's insert (weak: nothing to clear). */
  readonly #appended = new WeakMap<IncomingDelivery, PayloadRef>();
  /** The batch a move is taking into the tables (one at a time, so the mark only rises over moved frames). */
  #moving: SpooledDelivery[] | undefined;
  /**
   * Since the last move, deliveries arrived together: the intake committed some (not spooled), or
   * spooled more than one in a turn.
   */
  #together = 0;
  /** Deliveries spooled in this turn of the event loop, written together at its end (#writeSpoolTurn). */
  #spoolTurn: { seq: number; delivery: IncomingDelivery; resolve(result: "recorded" | "duplicate"): void; reject(error: unknown): void }[] = [];
  #spoolRestsUntil = 0;
  /** The log file the mark pointed at when the store opened (the first this process writes). */
  #openedAt: string | undefined;
  /** Every id stored or spooled, when there is a spool (id-filter.ts): rules out most duplicate lookups once `#idsReady`. */
  readonly #ids: IdFilter | undefined;
  #idsReady = false;
  readonly #movedListeners: ((queued: number) => void)[] = [];

  readonly #filesOfBodies: Statement;
  readonly #bodiesIn: Statement;
  readonly #moveBody: Statement;
  readonly #moveRowBody: Statement;

  /**
   * `payloads`: where payloads are written and read (payload-log.ts). `spool`: the service's
   * (spool.ts), in the payload log; what a crash left unmoved is moved into the tables here,
   * before anything else.
   * `thread`: the store's thread (store-thread.ts): the group commit keeps out of its way, and
   * spooled deliveries are moved there while it runs.
   */
  constructor(
    private readonly db: Database,
    private readonly payloads: PayloadLog,
    private readonly thread?: StoreThread,
    private readonly spool?: SpoolSettings,
  ) {
    this.#writes = new GroupCommit(db, thread, () => payloads.syncAppended());
    this.#writes.beforeTransaction(() => this.#appendTurn());
    this.#insert = db.prepare(INSERT_QUEUED_SQL);
    this.#probeRow = db.prepare("INSERT OR REPLACE INTO kv (key, value, expires_at, updated_at) VALUES (?, ?, NULL, ?)");
    this.#probeRowGone = db.prepare("DELETE FROM kv WHERE key = ?");
    this.#insertBody = db.prepare(
      "INSERT OR REPLACE INTO delivery_bodies (id, headers, payload, payload_file, payload_offset, payload_length) VALUES (?, ?, ?, ?, ?, ?)",
    );
    // Payload-log references live in both tables (schema.ts, 9 -> 10).
    this.#filesOfBodies = db.prepare(
      `SELECT file, sum(bytes) AS bytes FROM (
         SELECT payload_file AS file, payload_length AS bytes FROM deliveries WHERE payload_file IS NOT NULL
         UNION ALL SELECT payload_file, payload_length FROM delivery_bodies WHERE payload_file IS NOT NULL)
       GROUP BY file`,
    );
    this.#bodiesIn = db.prepare(
      `SELECT id, payload_offset AS offset, payload_length AS length, 1 AS inRow FROM deliveries WHERE payload_file = @file
       UNION ALL SELECT id, payload_offset, payload_length, 0 FROM delivery_bodies WHERE payload_file = @file`,
    );
    this.#moveBody = db.prepare("UPDATE delivery_bodies SET payload_file = ?, payload_offset = ?, payload_length = ? WHERE id = ?");
    this.#moveRowBody = db.prepare("UPDATE deliveries SET payload_file = ?, payload_offset = ?, payload_length = ? WHERE id = ?");
    // Each arm of "due" reads its own partial index (schema.ts), in the order it is served.
    const ready = "FROM deliveries WHERE status IN ('queued', 'failed') AND next_run_at <= @now";
    const expired = "FROM deliveries WHERE status = 'running' AND lease_until <= @now";
    this.#readyIds = db.prepare(`SELECT id ${ready} ORDER BY next_run_at, received_at LIMIT @max`);
    // The payload the pool reads next, or soon (a retry due within a minute): the log keeps its pages, and later ones, cached.
    const nextToRead = db.prepare(`SELECT payload_file AS file, payload_offset AS offset ${ready} ORDER BY next_run_at, received_at LIMIT 1`);
    payloads.holdPagesFrom(() => {
      const row = nextToRead.get({ now: Date.now() + HOLD_DUE_WITHIN_MS }) as { file: string | null; offset: number | null } | undefined;
      return row?.file ? { file: row.file, offset: row.offset ?? 0 } : undefined;
    });
    this.#expiredIds = db.prepare(`SELECT id ${expired} ORDER BY lease_until LIMIT @max`);
    this.#anyDue = db.prepare(`SELECT EXISTS (SELECT 1 ${expired}) OR EXISTS (SELECT 1 ${ready}) AS due`).pluck();
    this.#orphans = db.prepare("SELECT id, lease_token FROM deliveries WHERE status = 'running'");
    this.#lease = db.prepare(
      `UPDATE deliveries SET status = 'running', lease_token = ?, lease_until = ?, attempts = attempts + 1, updated_at = ?
       WHERE id = ? RETURNING *`,
    );
    this.#body = db.prepare("SELECT headers, payload, payload_file, payload_offset, payload_length FROM delivery_bodies WHERE id = ?");
    this.#byId = db.prepare(`${withBody} WHERE d.id = ?`);
    this.#outcomesOf = db.prepare("SELECT * FROM outcomes WHERE delivery_id = ? ORDER BY handler");
    // A handler's latest run is its outcome row; `attempts` keeps the runs before it, each logged
    // when the next run replaces it or a replay clears it (schema 12): a delivery run once writes
    // no attempt row. `logged = 0` marks an outcome whose run is not in `attempts` yet.
    const logOutcomes = `INSERT INTO attempts (delivery_id, handler, attempt, status, detail, at)
       SELECT delivery_id, handler, attempts, status, detail, updated_at FROM outcomes WHERE logged = 0 AND delivery_id = ?`;
    this.#logPrevious = db.prepare(`${logOutcomes} AND handler = ?`);
    this.#logAllPrevious = db.prepare(logOutcomes);
    this.#attemptsOf = db.prepare(
      `SELECT * FROM (
         SELECT seq, 0 AS latest, handler, attempt, status, detail, at FROM attempts WHERE delivery_id = @id
         UNION ALL
         SELECT NULL, 1, handler, attempts, status, detail, updated_at FROM outcomes WHERE delivery_id = @id AND logged = 0
         ORDER BY at DESC, latest DESC, seq DESC LIMIT ${MAX_ATTEMPTS_SHOWN})
       ORDER BY at, latest, seq, handler`,
    );
    this.#holds = db.prepare("SELECT 1 FROM deliveries WHERE id = ? AND lease_token = ? AND status = 'running'");
    this.#upsertOutcome = db.prepare(
      `INSERT INTO outcomes (delivery_id, handler, status, detail, retryable, attempts, seconds, updated_at, logged)
       VALUES (?, ?, ?, ?, ?, 1, ?, ?, 0)
       ON CONFLICT (delivery_id, handler) DO UPDATE SET status = excluded.status, detail = excluded.detail,
         retryable = excluded.retryable, attempts = outcomes.attempts + 1, seconds = excluded.seconds, updated_at = excluded.updated_at,
         logged = 0`,
    );
    this.#finish = db.prepare(
      `UPDATE deliveries SET status = ?, next_run_at = ?, last_error = ?, lease_token = NULL, lease_until = NULL, updated_at = ?
       WHERE id = ? AND lease_token = ?`,
    );
    this.#depth = db
      .prepare(
        `SELECT (SELECT count(*) FROM deliveries WHERE status IN ('queued', 'failed'))
              + (SELECT count(*) FROM deliveries WHERE status = 'running')`,
      )
      .pluck();
    this.#exists = db.prepare("SELECT 1 FROM deliveries WHERE id = ?").pluck();
    this.#moveMark = db.prepare("SELECT seq, log_file AS file, log_offset AS offset FROM spool_moved WHERE id = 1");
    this.#setMovedSeq = db.prepare(SET_MOVED_SEQ_SQL);
    if (spool) {
      this.#recoverSpool(spool);
      payloads.onRoll((file) => this.#markFrom(file));
      this.#ids = new IdFilter();
      this.#fillIds(this.#ids, db.prepare("SELECT rowid AS r, id FROM deliveries WHERE rowid > ? ORDER BY rowid LIMIT 20000").raw(), 0);
    }
    this.#nextDue = db
      .prepare(
        `SELECT min(t) FROM (
           SELECT min(next_run_at) AS t FROM deliveries WHERE status IN ('queued', 'failed')
           UNION ALL SELECT min(lease_until) FROM deliveries WHERE status = 'running')`,
      )
      .pluck();
  }

  // ---- intake -------------------------------------------------------------

  /** Durable once resolved (group commit: one WAL append per turn of the event loop, not per delivery). */
  record(delivery: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    if (this.#closed) return Promise.reject(new Error("store is closed"));
    if (this.#unmoved.has(delivery.id)) return Promise.resolve("duplicate");
    this.#together++;
    this.#toAppend.push(delivery);
    return this.#writes.run(() => (this.#insertQueued(delivery) ? "recorded" : "duplicate"));
  }

  /** `ref`: the payload's place when it is in the payload log already (a spooled delivery's). */
  #insertQueued(d: IncomingDelivery, ref?: PayloadRef): boolean {
    return this.#insertWithBody(this.#insert, queuedValues(d, Date.now()), d, keptHeaders(d.headers), ref);
  }

  /**
   * Inside a transaction: the queue row by `insert` (`row`: its values before the body's four),
   * with its body; false when the id was there already. With the payload log the payload is
   * appended first and the row says where (one row, one id index: schema.ts, 9 -> 10); a
   * duplicate's append is left unreferenced, for collectPayloads. Inline, the body is a row of
   * delivery_bodies as before.
   */
  #insertWithBody(insert: Statement, row: unknown[], d: IncomingDelivery, headers: Record<string, string>, appended?: PayloadRef): boolean {
    // Added even if the transaction then rolls back: a filter that says "maybe" too often is still right.
    this.#ids?.add(d.id);
    if (appended) return insert.run(withLoggedBody(row, headers, appended)).changes === 1;
    if (!this.payloads.writable) {
      if (insert.run(row).changes === 0) return false;
      this.#insertBody.run(d.id, JSON.stringify(headers), d.payload, null, null, null);
      return true;
    }
    return insert.run(withLoggedBody(row, headers, this.#appendPayload(d))).changes === 1;
  }

  /** The payload's place: appended with the turn's others (#appendTurn), or now. */
  #appendPayload(d: IncomingDelivery): PayloadRef {
    return this.#appended.get(d) ?? this.payloads.append(d.payloadBytes ?? d.payload);
  }

  /**
   * Before a commit: the payloads of the deliveries recorded since the last one, in one write
   * (the request's bytes as received when there are any, not encoded again). A payload not
   * appended here (the write failed, or the delivery is not in the list) is appended by its insert.
   */
  #appendTurn(): void {
    const turn = this.#toAppend;
    if (turn.length === 0) return;
    this.#toAppend = [];
    if (!this.payloads.writable) return;
    const refs = this.payloads.appendMany(turn.map((d) => d.payloadBytes ?? Buffer.from(d.payload, "utf8")));
    turn.forEach((d, i) => this.#appended.set(d, refs[i]!));
  }

  /**
   * The payload of a body row: inline (rows from before the payload log, or a store that keeps
   * them there), else read from the log. A payload whose file was removed by hand reads as empty:
   * its run fails as "stored payload is not valid JSON" rather than every claim and listing failing.
   */
  #payloadOf(body: BodyRow): string {
    if (body.payload_file === null) return body.payload ?? "";
    return this.payloads.read({ file: body.payload_file, offset: body.payload_offset!, length: body.payload_length! }) ?? "";
  }

  /**
   * As `record`, through the spool (spool.ts): durable against a crash of the process once
   * resolved, in the tables (claimable, listed) a few milliseconds later, when `onMoved` listeners
   * hear of it. Undefined when this store has no spool, or too many wait for their move: use `record`.
   *
   * The deliveries spooled in one turn of the event loop are written together at its end, in one
   * system call (#writeSpoolTurn): during a flood every connection's delivery goes there, and the
   * intake runs no insert and no commit for any of them; they are moved in batches (#moveBatch).
   */
  recordSpooled(delivery: IncomingDelivery): Promise<"recorded" | "duplicate"> | undefined {
    if (!this.spool || this.#closed || !this.payloads.writable || Date.now() < this.#spoolRestsUntil) return undefined;
    if (this.#unmoved.has(delivery.id)) return Promise.resolve("duplicate");
    if (this.#unmoved.size >= (this.spool.maxUnmoved ?? DEFAULT_MAX_UNMOVED)) return undefined;
    const maybeStored = !this.#idsReady || this.#ids!.mightHave(delivery.id);
    if (maybeStored && this.#exists.get(delivery.id) !== undefined) return Promise.resolve("duplicate");
    // Numbered and counted as unmoved now, so that the same id later in this turn is a duplicate.
    const seq = ++this.#seq;
    this.#unmoved.add(delivery.id);
    if (this.#spoolTurn.length === 0) setImmediate(() => this.#writeSpoolTurn());
    return new Promise((resolve, reject) => this.#spoolTurn.push({ seq, delivery, resolve, reject }));
  }

  /**
   * The turn's spooled deliveries into the log in one write, each a frame (its fields, then its
   * payload, which the moved row points at), answered once written. If the write fails (disk
   * full, permissions) each is committed as `record` would (and says so if that fails too), and
   * the spool rests a while rather than failing on every delivery. Frames of the failed write
   * that did land whole are moved again after a crash: their inserts ignore the id.
   */
  #writeSpoolTurn(): void {
    const turn = this.#spoolTurn;
    if (turn.length === 0) return;
    this.#spoolTurn = [];
    if (turn.length > 1) this.#together++;
    const payloads = turn.map(({ delivery: d }) => d.payloadBytes ?? Buffer.from(d.payload, "utf8"));
    let refs: PayloadRef[];
    try {
      refs = this.payloads.appendMany(payloads, turn.map(({ seq, delivery }, i) => frameHead(seq, delivery, payloads[i]!)));
    } catch {
      this.#spoolRestsUntil = Date.now() + SPOOL_REST_MS;
      for (const { delivery, resolve, reject } of turn) {
        this.#unmoved.delete(delivery.id);
        this.record(delivery).then(resolve, reject);
      }
      return;
    }
    turn.forEach(({ seq, delivery, resolve }, i) => {
      const { payloadBytes: _written, ...kept } = delivery;
      // Its id goes into the filter with the move's insert; until then `#unmoved` answers for it.
      this.#toMove.push({ seq, delivery: { ...kept, payload: "" }, ref: refs[i]! });
      resolve("recorded");
    });
    this.#armMove();
  }

  /**
   * The next move, after MOVE_MS, or THREAD_MOVE_MS when it will be the thread's (#moveBatch). A
   * move armed for the thread is brought forward once deliveries arrive together: a flood's first
   * batch is then moved as soon as its others, not 50 ms of deliveries in one commit here.
   */
  #armMove(delay = this.#threadMoves() ? THREAD_MOVE_MS : MOVE_MS): void {
    const at = Date.now() + delay;
    if (this.#moveTimer !== undefined && this.#moveAt <= at) return;
    clearTimeout(this.#moveTimer);
    this.#moveAt = at;
    this.#moveTimer = setTimeout(() => this.#move(), delay);
  }

  /** Whether the next move is the thread's (#moveBatch): there is one, and no deliveries arrived together since the last move. */
  #threadMoves(): boolean {
    return this.thread !== undefined && this.#together === 0;
  }

  /** `listener` hears each time spooled deliveries reached the tables, with how many of them wait to run. */
  onMoved(listener: (queued: number) => void): void {
    this.#movedListeners.push(listener);
  }

  /** Spooled deliveries into the tables, in one transaction that also records the highest number moved. */
  #move(): void {
    this.#moveTimer = undefined;
    if (this.#moving || this.#toMove.length === 0) return;
    const batch = this.#toMove;
    this.#toMove = [];
    this.#moving = batch;
    this.#moveBatch(batch).then(
      () => {
        this.#moving = undefined;
        if (this.#closed) return;
        for (const { delivery } of batch) this.#unmoved.delete(delivery.id);
        if (this.#toMove.length > 0) this.#armMove();
        const queued = batch.reduce((n, { delivery }) => (delivery.settled ? n : n + 1), 0);
        for (const listener of this.#movedListeners) listener(queued);
      },
      () => {
        // Still in the spool, still answered for: back to the front of the line, tried again later.
        this.#moving = undefined;
        if (this.#closed) return;
        this.#toMove = [...batch, ...this.#toMove];
        this.#armMove(MOVE_RETRY_MS);
      },
    );
  }

  /**
   * On the store's thread when deliveries arrive one at a time (none arrived together since the
   * last move), the thread runs and every payload is in the log (the rows are then one insert each):
   * the sender of the next one waits while the event loop works, and the thread's commit keeps it
   * off that path. Else by this connection's group commit. Each connection's page cache is dropped
   * whenever the other has committed, so while both write all the time (a flood: the pool's claims
   * and finishes here, moves there) every move on the thread read its index pages again, and the
   * next commit here did too: at 50 connections the thread's moves cost more, over both threads,
   * than the inserts here (analysis.md, stop 40). The inserts ignore an id that is there, so a
   * batch the thread committed just before it failed is moved again harmlessly.
   */
  #moveBatch(batch: SpooledDelivery[]): Promise<void> {
    const onMain = () => this.#writes.run(() => this.#insertMoved(batch));
    const onThread = this.#threadMoves();
    this.#together = 0;
    if (!onThread || !this.thread || !batch.every((s) => s.ref)) return onMain();
    const now = Date.now();
    const rows = batch.map(({ delivery: d, ref }) => {
      this.#ids?.add(d.id);
      return withLoggedBody(queuedValues(d, now), keptHeaders(d.headers), ref!);
    });
    const end = this.#endOf(batch);
    return this.thread.move(rows, batch[batch.length - 1]!.seq, end.file, end.offset).catch(onMain);
  }

  /** Where the batch's last frame ends in the log (its payload is the frame's last part). */
  #endOf(batch: SpooledDelivery[]): LogPosition {
    const ref = batch[batch.length - 1]!.ref;
    return ref ? { file: ref.file, offset: ref.offset + ref.length } : this.payloads.position();
  }

  /**
   * Inside a transaction: `batch` (oldest first) into the tables, and the mark: by default its
   * highest number and where its last frame ends.
   */
  #insertMoved(batch: SpooledDelivery[], mark: { seq: number; at: LogPosition } = { seq: batch[batch.length - 1]!.seq, at: this.#endOf(batch) }): void {
    for (const { delivery, ref } of batch) this.#insertQueued(delivery, ref);
    this.#setMovedSeq.run(mark.seq, mark.at.file, mark.at.offset);
  }

  /**
   * The log rolled to `file`: with nothing waiting for a move, no frame before it is unmoved, so
   * recovery may start there. Without this a service whose deliveries are mostly committed (no
   * flood, every delivery taken) keeps its mark where its log began, and recovery after a crash
   * would read everything the process ever wrote.
   */
  #markFrom(file: string): void {
    // The log's first file is where the mark was put at open.
    if (this.#closed || this.#unmoved.size > 0 || file === this.#openedAt) return;
    const seq = this.#seq;
    // Deferred: the roll may happen inside a commit's writes; a move numbered above `seq` meanwhile keeps its own place.
    this.#writes.runDeferred(() => this.#setMovedSeq.run(seq, file, 0)).catch(() => undefined);
  }

  /**
   * At open: the frames a crash left numbered above the last move (in the log from the mark on, and
   * in a ring file of an older version) go into the tables. The mark then points where this
   * process's log begins: its frames can only be there or later.
   */
  #recoverSpool(spool: SpoolSettings): void {
    const mark = this.#moveMark.get() as { seq: number; file: string | null; offset: number | null } | undefined;
    const above = (f: SpooledDelivery) => f.seq > (mark?.seq ?? 0);
    const left = [
      ...(spool.ringPath ? framesInRing(spool.ringPath).filter(above) : []),
      ...(mark?.file ? framesInLog(this.payloads.dir, { file: mark.file, offset: mark.offset ?? 0 }).filter(above) : []),
    ].sort((a, b) => a.seq - b.seq);
    this.#seq = Math.max(mark?.seq ?? 0, left.at(-1)?.seq ?? 0);
    const start = this.payloads.position();
    this.#openedAt = start.file;
    writeTransaction(this.db, () => this.#insertMoved(left, { seq: this.#seq, at: start }))();
    if (spool.ringPath) removeRing(spool.ringPath);
  }

  /**
   * The stored ids into the filter, 20,000 a turn (a million take ~0.6 s; the store opens at once
   * and the spool looks every id up until the filter is whole). The service is the store's only
   * writer of deliveries, and every insert adds its id, so rows added meanwhile are in it either way.
   */
  #fillIds(ids: IdFilter, page: Statement, after: number): void {
    if (this.#closed) return;
    const rows = page.all(after) as [number, string][];
    for (const [, id] of rows) ids.add(id);
    if (rows.length === 0) this.#idsReady = true;
    else setImmediate(() => this.#fillIds(ids, page, rows[rows.length - 1]![0]));
  }

  /** Whether the id filter holds every stored id (false without a spool). */
  get idsReady(): boolean {
    return this.#idsReady;
  }

  /** Deliveries spooled and not yet moved into the tables. */
  get spooled(): number {
    return this.#unmoved.size;
  }

  async ready(): Promise<boolean> {
    if (this.#closed) return false;
    try {
      this.db.prepare("SELECT 1").get();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * StewardStore.canRecord: what recording a delivery writes, written and taken back. The
   * payload's bytes where the payload log writes (a scratch file), then a row inserted and deleted
   * in one commit of the group commit, so the probe waits its turn like any write and leaves
   * nothing a reader could see.
   */
  async canRecord(payloadBytes: number): Promise<boolean> {
    if (this.#closed) return false;
    try {
      if (this.payloads.writable) await probeFileWrite(this.payloads.dir, payloadBytes);
      await this.#writes.run(() => {
        this.#probeRow.run(PROBE_KEY, "x".repeat(PROBE_ROW_BYTES), Date.now());
        this.#probeRowGone.run(PROBE_KEY);
      });
      return true;
    } catch {
      return false;
    }
  }

  async depth(): Promise<number> {
    return (this.#depth.get() as number) + this.#unmoved.size;
  }

  markClosed(): void {
    // What is spooled goes into the tables with the last commit; the spool file is then empty. A
    // batch the store's thread is moving goes too: its inserts are ignored if the thread's came first.
    clearTimeout(this.#moveTimer);
    this.#writeSpoolTurn();
    const batch = [...(this.#moving ?? []), ...this.#toMove];
    this.#toMove = [];
    if (batch.length > 0) void this.#writes.run(() => this.#insertMoved(batch));
    this.#writes.close();
    this.#closed = true;
    this.payloads.close();
  }

  // ---- queue --------------------------------------------------------------

  /** Running deliveries whose owner process died on this host go back to the queue now. */
  recoverOrphans(): number {
    const rows = this.#orphans.all() as { id: string; lease_token: string | null }[];
    let recovered = 0;
    for (const r of rows) {
      if (r.lease_token !== null && leaseOwnerDead(r.lease_token)) {
        this.db
          .prepare("UPDATE deliveries SET status = 'queued', lease_token = NULL, lease_until = NULL WHERE id = ? AND lease_token = ?")
          .run(r.id, r.lease_token);
        recovered++;
      }
    }
    return recovered;
  }

  async claimDelivery(leaseMs: number): Promise<ClaimedDelivery | undefined> {
    return (await this.claimDeliveries(leaseMs, 1))[0];
  }

  /** Up to `max` due deliveries leased in one transaction: expired leases first, then by due time. */
  async claimDeliveries(leaseMs: number, max: number): Promise<ClaimedDelivery[]> {
    // Looking is a read; only take the write lock when there is something to lease.
    if (max < 1 || !this.#anyDue.get({ now: Date.now() })) return [];
    // Committed with the writes waiting for the next group commit: one commit, not two.
    if (this.#writes.held) return this.#writes.run(() => this.#claimNow(leaseMs, max));
    return this.#writes.runNow(() => this.#claimNow(leaseMs, max));
  }

  #claimNow(leaseMs: number, max: number): ClaimedDelivery[] {
    const now = Date.now();
    const ids = (this.#expiredIds.all({ now, max }) as { id: string }[]).map((r) => r.id);
    if (ids.length < max) for (const r of this.#readyIds.all({ now, max: max - ids.length }) as { id: string }[]) ids.push(r.id);
    return ids.map((id) => {
      const token = newLeaseToken();
      const row = this.#lease.get(token, now + leaseMs, now, id) as QueueRow;
      // The body is in the row RETURNING gave, unless the row is older than schema 10 or inline.
      const body = row.headers !== null ? ({ ...row, headers: row.headers, payload: null } as BodyRow) : (this.#body.get(id) as BodyRow);
      const outcomes = (this.#outcomesOf.all(id) as OutcomeRow[]).map(toOutcome);
      return { token, delivery: readLater(toDelivery({ ...row, headers: body.headers }, ""), () => this.#payloadOf(body)), outcomes };
    });
  }

  async recordOutcome(token: string, deliveryId: string, handler: string, outcome: Outcome, seconds: number): Promise<boolean> {
    const { status, detail, retryable } = outcomeRecord(outcome);
    return this.#writes.runDeferred(() => {
      if (!this.#holds.get(deliveryId, token)) return false;
      this.#logPrevious.run(deliveryId, handler);
      this.#upsertOutcome.run(deliveryId, handler, status, detail ?? null, retryable ? 1 : 0, seconds, Date.now());
      return true;
    });
  }

  async finishDelivery(token: string, deliveryId: string, decision: DeliveryDecision): Promise<boolean> {
    const nextRunAt = decision.status === "failed" ? decision.retryAt.getTime() : undefined;
    const lastError = decision.status === "done" ? null : decision.lastError;
    return this.#writes.runDeferred(() => {
      const now = Date.now();
      return this.#finish.run(decision.status, nextRunAt ?? now, lastError, now, deliveryId, token).changes === 1;
    });
  }

  async listDeliveries(filter: DeliveryFilter = {}): Promise<StoredDelivery[]> {
    const clauses: string[] = [];
    const params: Record<string, unknown> = { limit: filter.limit ?? 100 };
    if (filter.status) {
      clauses.push("d.status = @status");
      params.status = filter.status;
    }
    if (filter.event) {
      clauses.push("d.event = @event");
      params.event = filter.event;
    }
    if (filter.since) {
      clauses.push("d.received_at >= @since");
      params.since = filter.since.getTime();
    }
    const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
    const rows = this.db
      .prepare(`${withBody} ${where} ORDER BY d.received_at DESC, d.id LIMIT @limit`)
      .all(params) as DeliveryRow[];
    return rows.map((r) => toDelivery(r, this.#payloadOf(r)));
  }

  async getDelivery(id: string): Promise<DeliveryRecord | undefined> {
    const row = this.#byId.get(id) as DeliveryRow | undefined;
    if (!row) return undefined;
    const attempts = (this.#attemptsOf.all({ id }) as AttemptRow[]).map((a) => ({
      handler: a.handler,
      attempt: a.attempt,
      status: a.status,
      detail: a.detail ?? undefined,
      at: new Date(a.at),
    }));
    return { delivery: toDelivery(row, this.#payloadOf(row)), outcomes: (this.#outcomesOf.all(id) as OutcomeRow[]).map(toOutcome), attempts };
  }


  async replayDelivery(id: string): Promise<boolean> {
    return writeTransaction(this.db, () => {
      const now = Date.now();
      const changed = this.db
        .prepare(
          `UPDATE deliveries SET status = 'queued', attempts = 0, next_run_at = ?, last_error = NULL, updated_at = ?
           WHERE id = ? AND status != 'running'`,
        )
        .run(now, now, id).changes;
      if (changed === 0) return false;
      // The runs so far stay in the history; the replay's runs start again from attempt 1.
      this.#logAllPrevious.run(id);
      this.db.prepare("DELETE FROM outcomes WHERE delivery_id = ?").run(id);
      return true;
    })();
  }

  async purgeFinished(beforeDate: Date): Promise<number> {
    const before = beforeDate.getTime();
    // Each batch its own transaction (in-batches.ts).
    const batch = writeTransaction(this.db, (limit: number) => {
      const ids = (this.db.prepare(PURGE_FINISHED_SQL).all(before, before, limit) as { id: string }[]).map((r) => r.id);
      if (ids.length === 0) return 0;
      const list = JSON.stringify(ids);
      const inList = "(SELECT value FROM json_each(?))";
      this.db.prepare(`DELETE FROM outcomes WHERE delivery_id IN ${inList}`).run(list);
      this.db.prepare(`DELETE FROM attempts WHERE delivery_id IN ${inList}`).run(list);
      this.db.prepare(`DELETE FROM delivery_bodies WHERE id IN ${inList}`).run(list);
      return this.db.prepare(`DELETE FROM deliveries WHERE id IN ${inList}`).run(list).changes;
    });
    const purged = await inBatches(batch);
    if (purged > 0) this.collectPayloads();
    return purged;
  }

  /**
   * Payload-log files no row needs any more go; a finished file whose live payloads are a small
   * part of it has them copied into the current file first (in one commit with the rows that now
   * point there, so a crash leaves either the old or the new place referenced, both whole).
   */
  collectPayloads(): Collected {
    const live = new Map((this.#filesOfBodies.all() as { file: string; bytes: number }[]).map((r) => [r.file, r.bytes]));
    const done: Collected = { removed: 0, moved: 0, kept: 0 };
    // A file holding spooled deliveries not moved yet is referenced by no row, and still needed.
    const spooled = new Set([...(this.#moving ?? []), ...this.#toMove].map((s) => s.ref?.file));
    for (const { file, size } of this.payloads.finishedFiles()) {
      if (spooled.has(file)) continue;
      const bytes = live.get(file);
      if (bytes !== undefined && !PayloadLog.sparse(size, bytes)) continue;
      if (bytes !== undefined) {
        try {
          done.moved += writeTransaction(this.db, () => {
            const bodies = this.#bodiesIn.all({ file }) as { id: string; offset: number; length: number; inRow: number }[];
            for (const b of bodies) {
              const payload = this.payloads.readBytes({ file, offset: b.offset, length: b.length });
              if (payload === undefined) throw new Error(`payload-log file ${file} cannot be read for compaction`);
              const ref = this.payloads.append(payload);
              (b.inRow === 1 ? this.#moveRowBody : this.#moveBody).run(ref.file, ref.offset, ref.length, b.id);
            }
            this.payloads.syncAppended();
            return bodies.length;
          })();
        } catch {
          // A file cut short (by hand, or a full disk) keeps its rows where they were and stays:
          // what is readable in it still is, and the other files are collected as usual.
          done.kept++;
          continue;
        }
      }
      this.payloads.remove(file);
      done.removed++;
    }
    return done;
  }

  // ---- leases and idleness (shared statements are cheap; kept here beside the table) ----

  renewLease(token: string, until: number): boolean {
    // "running" first: a leased row is always running, and the running rows have an index (schema.ts).
    return this.db.prepare("UPDATE deliveries SET lease_until = ? WHERE status = 'running' AND lease_token = ?").run(until, token).changes > 0;
  }

  releaseLease(token: string): void {
    // attempts was counted at claim; an interrupted run does not use up an attempt.
    this.db
      .prepare(
        `UPDATE deliveries SET status = 'queued', attempts = max(0, attempts - 1), lease_token = NULL, lease_until = NULL, next_run_at = ?
         WHERE status = 'running' AND lease_token = ?`,
      )
      .run(Date.now(), token);
  }

  pending(): number {
    return (this.#depth.get() as number) + this.#unmoved.size;
  }

  nextDueAt(): number | undefined {
    return (this.#nextDue.get() as number | null) ?? undefined;
  }
}
