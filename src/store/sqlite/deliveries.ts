// Deliveries in SQLite: the durable intake and the leased delivery queue with per-handler
// outcomes. A delivery is one row, its headers and payload in a row of their own (schema.ts), so
// claims and finishes rewrite a small row. Records, claims, outcomes and finishes go through the
// group commit (group-commit.ts).
import type { Database, Statement } from "better-sqlite3";
import type { DeliveriesPart } from "../contract.js";
import type {
  AttemptRecord,
  ClaimedDelivery,
  DeliveryDecision,
  DeliveryFilter,
  DeliveryRecord,
  DeliveryStatus,
  HandlerOutcomeRecord,
  IncomingDelivery,
  Outcome,
  StoredDelivery,
} from "../records.js";
import { keptHeaders, outcomeRecord } from "../recorded.js";
import { leaseOwnerDead, newLeaseToken } from "../../lifecycle/process-owner.js";
import { GroupCommit } from "./group-commit.js";
import { inBatches } from "./in-batches.js";
import { writeTransaction } from "./write-transaction.js";

/** The kv row canRecord writes and deletes in one commit: a key no handler or housekeeping uses (it starts with NUL). */
const PROBE_KEY = "\u0000steward:record-probe";
/** About a delivery's row and headers, beside its payload. */
const PROBE_ROW_BYTES = 512;
/** Handler runs `deliveries show` keeps per delivery (a delivery retried forever stays bounded). */
const MAX_ATTEMPTS_SHOWN = 200;

/** A delivery's row with its headers and payload (payloads table). */
export interface DeliveryRow {
  seq: number;
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
  headers: string;
  payload: string;
}

interface OutcomeRow {
  handler: string;
  status: Outcome["status"];
  detail: string | null;
  retryable: number;
  attempts: number;
  seconds: number;
  updated_at: number;
}

interface AttemptRow {
  handler: string;
  attempt: number;
  status: Outcome["status"];
  detail: string | null;
  at: number;
}

function toDelivery(r: DeliveryRow): StoredDelivery {
  return {
    id: r.id,
    event: r.event,
    action: r.action ?? undefined,
    installationId: r.installation_id ?? undefined,
    repository: r.repository ?? undefined,
    headers: JSON.parse(r.headers) as Record<string, string>,
    payload: r.payload,
    receivedAt: new Date(r.received_at),
    status: r.status,
    attempts: r.attempts,
    nextRunAt: new Date(r.next_run_at),
    lastError: r.last_error ?? undefined,
    updatedAt: new Date(r.updated_at),
  };
}

/**
 * `d` with its payload read from the payloads table the first time it is asked for. A claim leaves
 * the text there: a run whose handlers decide without the payload never holds it, and one that
 * reads it reads it once (docs/decisions/0019-claims-read-the-payload-when-asked.md).
 */
function payloadWhenAsked(d: StoredDelivery, read: () => string): StoredDelivery {
  // One getter for every claim, not a closure each: a getter made for one object gives it a hidden
  // class that V8 keeps until a full collection, and with it the text (docs/decisions/0024-getters-made-per-object.md).
  Object.defineProperty(d, UNREAD, { value: { read } });
  return Object.defineProperty(d, "payload", { enumerable: true, get: payloadOfRow });
}

const UNREAD = Symbol("payload read when asked");

function payloadOfRow(this: { [UNREAD]: { read: () => string; text?: string } }): string {
  const row = this[UNREAD];
  return (row.text ??= row.read());
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

function toAttempt(r: AttemptRow): AttemptRecord {
  return {
    handler: r.handler,
    attempt: r.attempt,
    status: r.status,
    detail: r.detail ?? undefined,
    at: new Date(r.at),
  };
}

/**
 * One batch of the purge of finished deliveries, read through the receipt index (a delivery
 * finished before the cutoff was received before it), so a batch reads only rows received before
 * the cutoff, never the table from its start.
 */
export const PURGE_FINISHED_SQL =
  "SELECT seq FROM deliveries WHERE received_at < ? AND status = 'done' AND updated_at < ? ORDER BY received_at LIMIT ?";

/** Select list and FROM of a delivery's row with its headers and payload (alias d). */
const WITH_PAYLOAD = "d.*, p.headers, p.payload FROM deliveries d JOIN payloads p ON p.delivery = d.seq";

export class SqliteDeliveries implements DeliveriesPart {
  readonly #writes: GroupCommit;
  #closed = false;
  readonly #insert: Statement;
  readonly #insertPayload: Statement;
  readonly #anyDue: Statement;
  readonly #expiredIds: Statement;
  readonly #readyIds: Statement;
  readonly #lease: Statement;
  readonly #byId: Statement;
  readonly #headersOf: Statement;
  readonly #payloadOf: Statement;
  readonly #outcomesOf: Statement;
  readonly #attemptsOf: Statement;
  readonly #holds: Statement;
  readonly #upsertOutcome: Statement;
  readonly #logAttempt: Statement;
  readonly #finish: Statement;
  readonly #depth: Statement;
  readonly #nextDue: Statement;
  readonly #oldestDue: Statement;
  readonly #probe: Statement;
  readonly #probeGone: Statement;
  readonly #claim: (leaseMs: number, max: number) => ClaimedDelivery[];

  /** `afterCommit`: told after each commit of the group commit (the store's write-behind of the log). */
  constructor(
    private readonly db: Database,
    afterCommit?: () => void,
  ) {
    this.#writes = new GroupCommit(db, afterCommit);
    this.#insert = db.prepare(
      `INSERT OR IGNORE INTO deliveries
         (id, event, action, installation_id, repository, received_at, status, attempts, next_run_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
    );
    this.#insertPayload = db.prepare("INSERT INTO payloads (delivery, headers, payload) VALUES (?, ?, ?)");
    // Each arm of "due" reads its own partial index (schema.ts), in the order it is served.
    const ready = "FROM deliveries WHERE status IN ('queued', 'failed') AND next_run_at <= @now";
    const expired = "FROM deliveries WHERE status = 'running' AND lease_until <= @now";
    this.#anyDue = db.prepare(`SELECT EXISTS (SELECT 1 ${expired}) OR EXISTS (SELECT 1 ${ready})`).pluck();
    this.#expiredIds = db.prepare(`SELECT id ${expired} ORDER BY lease_until LIMIT @max`).pluck();
    this.#readyIds = db.prepare(`SELECT id ${ready} ORDER BY next_run_at, received_at LIMIT @max`).pluck();
    // The row and its headers; the run reads the payload when it needs it (payloadWhenAsked).
    this.#lease = db.prepare(
      `UPDATE deliveries SET status = 'running', lease_token = ?, lease_until = ?, attempts = attempts + 1, updated_at = ?
       WHERE id = ? RETURNING *, '' AS payload`,
    );
    this.#byId = db.prepare(`SELECT ${WITH_PAYLOAD} WHERE d.id = ?`);
    this.#headersOf = db.prepare("SELECT headers FROM payloads WHERE delivery = ?").pluck();
    this.#payloadOf = db.prepare("SELECT payload FROM payloads WHERE delivery = ?").pluck();
    this.#outcomesOf = db.prepare("SELECT * FROM outcomes WHERE delivery = ? ORDER BY handler");
    this.#attemptsOf = db.prepare(
      `SELECT handler, attempt, status, detail, at FROM attempts WHERE delivery = ? ORDER BY seq DESC LIMIT ${MAX_ATTEMPTS_SHOWN}`,
    );
    this.#holds = db
      .prepare("SELECT seq FROM deliveries WHERE id = ? AND lease_token = ? AND status = 'running'")
      .pluck();
    this.#upsertOutcome = db.prepare(
      `INSERT INTO outcomes (delivery, handler, status, detail, retryable, attempts, seconds, updated_at)
       VALUES (?, ?, ?, ?, ?, 1, ?, ?)
       ON CONFLICT (delivery, handler) DO UPDATE SET status = excluded.status, detail = excluded.detail,
         retryable = excluded.retryable, attempts = outcomes.attempts + 1, seconds = excluded.seconds, updated_at = excluded.updated_at
       RETURNING attempts`,
    );
    this.#logAttempt = db.prepare(
      "INSERT INTO attempts (delivery, handler, attempt, status, detail, at) VALUES (?, ?, ?, ?, ?, ?)",
    );
    this.#finish = db.prepare(
      `UPDATE deliveries SET status = ?, next_run_at = ?, last_error = ?, lease_token = NULL, lease_until = NULL, updated_at = ?
       WHERE id = ? AND lease_token = ?`,
    );
    // Two counts, each over its partial index (schema.ts), rather than one that reads every row.
    this.#depth = db
      .prepare(
        `SELECT (SELECT count(*) FROM deliveries WHERE status IN ('queued', 'failed'))
              + (SELECT count(*) FROM deliveries WHERE status = 'running')`,
      )
      .pluck();
    this.#nextDue = db
      .prepare(
        `SELECT min(t) FROM (
           SELECT min(next_run_at) AS t FROM deliveries WHERE status IN ('queued', 'failed')
           UNION ALL SELECT min(lease_until) FROM deliveries WHERE status = 'running')`,
      )
      .pluck();
    this.#oldestDue = db
      .prepare("SELECT min(next_run_at) FROM deliveries WHERE status IN ('queued', 'failed')")
      .pluck();
    this.#probe = db.prepare("INSERT OR REPLACE INTO kv (key, value, expires_at, updated_at) VALUES (?, ?, NULL, ?)");
    this.#probeGone = db.prepare("DELETE FROM kv WHERE key = ?");
    // Expired leases first, then by due time. Run in the group commit's IMMEDIATE transaction:
    // another process cannot lease the same rows in between.
    this.#claim = (leaseMs: number, max: number) => {
      const now = Date.now();
      const ids = this.#expiredIds.all({ now, max }) as string[];
      if (ids.length < max) ids.push(...(this.#readyIds.all({ now, max: max - ids.length }) as string[]));
      return ids.map((id) => {
        const token = newLeaseToken();
        const row = this.#lease.get(token, now + leaseMs, now, id) as Omit<DeliveryRow, "headers">;
        const seq = row.seq;
        return {
          token,
          delivery: payloadWhenAsked(
            toDelivery({ ...row, headers: this.#headersOf.get(seq) as string }),
            () => this.#payloadOf.get(seq) as string,
          ),
          outcomes: (this.#outcomesOf.all(seq) as OutcomeRow[]).map(toOutcome),
        };
      });
    };
  }

  // ---- intake -------------------------------------------------------------

  /** Durable once resolved: committed with the other writes of this turn. */
  record(d: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    if (this.#closed) return Promise.reject(new Error("store is closed"));
    const headers = JSON.stringify(keptHeaders(d.headers));
    return this.#writes.run(() => {
      const now = Date.now();
      const inserted = this.#insert.run(
        d.id,
        d.event,
        d.action ?? null,
        d.installationId ?? null,
        d.repository ?? null,
        d.receivedAt.getTime(),
        d.settled ? "done" : "queued",
        now,
        now,
      );
      if (inserted.changes === 0) return "duplicate";
      this.#insertPayload.run(inserted.lastInsertRowid, headers, d.payload);
      return "recorded";
    });
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
   * StewardStore.canRecord: a row the size of such a delivery, inserted and deleted in one commit
   * of the group commit, so the probe waits its turn like a record and leaves nothing a reader sees.
   */
  async canRecord(payloadBytes: number): Promise<boolean> {
    if (this.#closed) return false;
    try {
      await this.#writes.run(() => {
        this.#probe.run(PROBE_KEY, "x".repeat(PROBE_ROW_BYTES + Math.max(0, payloadBytes)), Date.now());
        this.#probeGone.run(PROBE_KEY);
      });
      return true;
    } catch {
      return false;
    }
  }

  async depth(): Promise<number> {
    return this.#depth.get() as number;
  }

  async oldestDueAt(): Promise<Date | undefined> {
    const at = this.#oldestDue.get() as number | null;
    return at === null ? undefined : new Date(at);
  }

  /** What is waiting is committed; later writes are refused. */
  markClosed(): void {
    this.#writes.close();
    this.#closed = true;
  }

  // ---- queue --------------------------------------------------------------

  async claimDelivery(leaseMs: number): Promise<ClaimedDelivery | undefined> {
    return (await this.claimDeliveries(leaseMs, 1))[0];
  }

  /**
   * Up to `max` due deliveries leased in one transaction: the group commit's, so that a claim
   * shares its commit with the records and finishes asked for in the same turn rather than
   * paying one of its own (a commit, not a statement, is most of what a write costs here).
   */
  async claimDeliveries(leaseMs: number, max: number): Promise<ClaimedDelivery[]> {
    // Looking is a read; only take the write lock when there is something to lease.
    if (max < 1 || !this.#anyDue.get({ now: Date.now() })) return [];
    return this.#writes.run(() => this.#claim(leaseMs, max));
  }

  recordOutcome(
    token: string,
    deliveryId: string,
    handler: string,
    outcome: Outcome,
    seconds: number,
  ): Promise<boolean> {
    const { status, detail, retryable } = outcomeRecord(outcome);
    return this.#writes.run(() => {
      const seq = this.#holds.get(deliveryId, token) as number | undefined;
      if (seq === undefined) return false;
      const now = Date.now();
      const { attempts } = this.#upsertOutcome.get(
        seq,
        handler,
        status,
        detail ?? null,
        retryable ? 1 : 0,
        seconds,
        now,
      ) as {
        attempts: number;
      };
      this.#logAttempt.run(seq, handler, attempts, status, detail ?? null, now);
      return true;
    });
  }

  finishDelivery(token: string, deliveryId: string, decision: DeliveryDecision): Promise<boolean> {
    const lastError = decision.status === "done" ? null : decision.lastError;
    return this.#writes.run(() => {
      const now = Date.now();
      const nextRunAt = decision.status === "failed" ? decision.retryAt.getTime() : now;
      return this.#finish.run(decision.status, nextRunAt, lastError, now, deliveryId, token).changes === 1;
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
      .prepare(`SELECT ${WITH_PAYLOAD} ${where} ORDER BY d.received_at DESC, d.id LIMIT @limit`)
      .all(params);
    return (rows as DeliveryRow[]).map(toDelivery);
  }

  async getDelivery(id: string): Promise<DeliveryRecord | undefined> {
    const row = this.#byId.get(id) as DeliveryRow | undefined;
    if (!row) return undefined;
    return {
      delivery: toDelivery(row),
      outcomes: (this.#outcomesOf.all(row.seq) as OutcomeRow[]).map(toOutcome),
      attempts: (this.#attemptsOf.all(row.seq) as AttemptRow[]).reverse().map(toAttempt),
    };
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
      // The runs so far stay in the history; the replay's runs count from attempt 1 again.
      this.db.prepare("DELETE FROM outcomes WHERE delivery = (SELECT seq FROM deliveries WHERE id = ?)").run(id);
      return true;
    })();
  }

  async purgeFinished(beforeDate: Date): Promise<number> {
    const before = beforeDate.getTime();
    // Each batch its own transaction (in-batches.ts). The schema's trigger deletes each delivery's
    // payload, outcomes and runs with it.
    const batch = writeTransaction(this.db, (limit: number) => {
      const seqs = this.db.prepare(PURGE_FINISHED_SQL).pluck().all(before, before, limit) as number[];
      if (seqs.length === 0) return 0;
      return this.db
        .prepare("DELETE FROM deliveries WHERE seq IN (SELECT value FROM json_each(?))")
        .run(JSON.stringify(seqs)).changes;
    });
    return inBatches(batch);
  }

  // ---- leases and idleness (kept here beside the table; leases.ts asks both tables) ----

  /** Running deliveries whose owner process died on this host go back to the queue now. */
  recoverOrphans(): number {
    const rows = this.db.prepare("SELECT id, lease_token FROM deliveries WHERE status = 'running'").all() as {
      id: string;
      lease_token: string | null;
    }[];
    const requeue = this.db.prepare(
      "UPDATE deliveries SET status = 'queued', lease_token = NULL, lease_until = NULL WHERE id = ? AND lease_token = ?",
    );
    let recovered = 0;
    for (const r of rows) {
      if (r.lease_token !== null && leaseOwnerDead(r.lease_token))
        recovered += requeue.run(r.id, r.lease_token).changes;
    }
    return recovered;
  }

  renewLease(token: string, until: number): boolean {
    // "running" first: a leased row is always running, and the running rows have an index (schema.ts).
    return (
      this.db
        .prepare("UPDATE deliveries SET lease_until = ? WHERE status = 'running' AND lease_token = ?")
        .run(until, token).changes > 0
    );
  }

  releaseLease(token: string, dueAt?: number): void {
    // attempts was counted at claim; an interrupted run does not use up an attempt.
    this.db
      .prepare(
        `UPDATE deliveries SET status = 'queued', attempts = max(0, attempts - 1), lease_token = NULL, lease_until = NULL, next_run_at = ?
         WHERE status = 'running' AND lease_token = ?`,
      )
      .run(dueAt ?? Date.now(), token);
  }

  pending(): number {
    return this.#depth.get() as number;
  }

  nextDueAt(): number | undefined {
    return (this.#nextDue.get() as number | null) ?? undefined;
  }
}
