// The console's reads of the SQLite store: keyset pages (received_at, seq) over the
// deliveries' indexes (schema.ts), newest first, summaries only.
import type { Database, Statement } from "better-sqlite3";
import type { DeliveryRow } from "./deliveries.js";
import { pageLimit, type ActivityRow, type DeliveryPage, type DeliveryQuery, type DeliverySummary } from "../browse.js";
import { DETAIL_READ, decisionsByDelivery, MAX_PAGE, type DecisionLine, type OutcomeLineRow } from "../browse.js";
import type { BrowsePart } from "../contract.js";

type SummaryRow = Omit<DeliveryRow, "seq" | "next_run_at" | "lease_token" | "headers" | "payload"> & { rid: number };

function parseCursor(cursor: string | undefined): { at: number; rid: number } | undefined {
  const m = cursor ? /^(\d+)\.(\d+)$/.exec(cursor) : null;
  return m ? { at: Number(m[1]), rid: Number(m[2]) } : undefined;
}

/**
 * Failed outcomes read through their index at most (outcomes_failed) before a page
 * sorts them by receipt; more than this and the row-by-row scan below is the cheaper way.
 */
const MAX_INDEXED_FAILED = 20_000;
/** Candidates read per step when an outcome filter is checked row by row. */
const OUTCOME_CHUNK = 1_000;
/** Time spent scanning for one page at most (after the first step). */
const SCAN_BUDGET_MS = 100;

/**
 * WHERE clause of the reader's repositories; `params` gets the values. For dead letters and
 * retrying deliveries the repository term is kept off its index (unary +), so the planner reads
 * the small partial index of that status instead of every delivery of those repositories.
 */
function scope(
  repositories: readonly string[] | undefined,
  params: Record<string, unknown>,
  byStatusIndex = false,
): string[] {
  if (repositories === undefined) return [];
  params.repos = JSON.stringify(repositories);
  return [`${byStatusIndex ? "+" : ""}d.repository IN (SELECT value FROM json_each(@repos))`];
}

const SUMMARY_COLUMNS = `d.seq AS rid, d.id, d.event, d.action, d.installation_id, d.repository, d.received_at, d.status,
  d.attempts, d.last_error, d.updated_at`;

function summaryOf(r: SummaryRow): DeliverySummary {
  return {
    id: r.id,
    event: r.event,
    action: r.action ?? undefined,
    installationId: r.installation_id ?? undefined,
    repository: r.repository ?? undefined,
    status: r.status,
    attempts: r.attempts,
    receivedAt: new Date(r.received_at),
    updatedAt: new Date(r.updated_at),
    lastError: r.last_error ?? undefined,
  };
}

export class SqliteBrowse implements BrowsePart {
  /** Prepared once per SQL text: the filters make a bounded set of them, and preparing was a third of a cheap page. */
  readonly #statements = new Map<string, Statement>();

  constructor(private readonly db: Database) {}

  #prepare(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  async browseDeliveries(q: DeliveryQuery): Promise<DeliveryPage> {
    const limit = pageLimit(q.limit);
    const params: Record<string, unknown> = {};
    const where = scope(q.repositories, params, q.status === "dead" || q.status === "failed");
    const add = (clause: string, name: string, value: unknown) => {
      if (value === undefined || value === "") return;
      where.push(clause);
      params[name] = value;
    };
    add("d.event = @event", "event", q.event);
    add("d.repository = @repository", "repository", q.repository);
    add("d.status = @status", "status", q.status);
    add("d.received_at >= @since", "since", q.since);
    add("d.received_at < @until", "until", q.until);
    const byOutcome = q.handler !== undefined || q.outcome !== undefined;
    // Failed outcomes are few: read them from their index, then sort them, rather than probing recent deliveries one by one.
    const indexed = q.outcome === "failed" && this.#fewFailed(q.handler);
    if (indexed) {
      where.push(
        `d.seq IN (SELECT delivery FROM outcomes INDEXED BY outcomes_failed WHERE status = 'failed'${q.handler !== undefined ? " AND handler = @handler" : ""})`,
      );
      if (q.handler !== undefined) params.handler = q.handler;
    }
    const probe = byOutcome && !indexed ? this.#outcomeProbe(q) : undefined;
    // With a position, a keyset condition the index can seek to (a page deep down costs what the first does).
    const statement = (after: boolean) => {
      const all = after ? [...where, "(d.received_at < @at OR (d.received_at = @at AND d.seq < @rid))"] : where;
      return this
        .#prepare(`SELECT ${SUMMARY_COLUMNS} FROM deliveries d ${all.length ? `WHERE ${all.join(" AND ")}` : ""}
        ORDER BY d.received_at DESC, d.seq DESC LIMIT @chunk`);
    };
    // An outcome filter is checked per candidate (a primary-key probe of outcomes), a chunk at a
    // time and within a time budget: a rare outcome answers a short page with a cursor, not a scan of everything.
    const chunk = probe ? OUTCOME_CHUNK : limit + 1;
    const deadline = Date.now() + SCAN_BUDGET_MS;
    const found: SummaryRow[] = [];
    let position = parseCursor(q.cursor);
    let more = false;
    for (let first = true; found.length < limit && (first || Date.now() < deadline); first = false) {
      const rows = (
        position ? statement(true).all({ ...params, ...position, chunk }) : statement(false).all({ ...params, chunk })
      ) as SummaryRow[];
      more = rows.length === chunk;
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i]!;
        if (found.length === limit) {
          more = true;
          break;
        }
        position = { at: r.received_at, rid: r.rid };
        if (!probe || probe(r.rid)) found.push(r);
      }
      if (!more) break;
    }
    return {
      items: found.map(summaryOf),
      next: more && position ? `${position.at}.${position.rid}` : undefined,
    };
  }

  /** Whether the failed outcomes (of `handler`, or of any) are few enough to read whole through their index. */
  #fewFailed(handler: string | undefined): boolean {
    const n = this.#prepare(
      `SELECT count(*) FROM (SELECT 1 FROM outcomes INDEXED BY outcomes_failed WHERE status = 'failed'${handler !== undefined ? " AND handler = ?" : ""} LIMIT ${MAX_INDEXED_FAILED + 1})`,
    )
      .pluck()
      .get(...(handler !== undefined ? [handler] : [])) as number;
    return n <= MAX_INDEXED_FAILED;
  }

  #outcomeProbe(q: DeliveryQuery): (seq: number) => boolean {
    const parts = ["delivery = @seq"];
    if (q.handler !== undefined) parts.push("handler = @handler");
    if (q.outcome !== undefined) parts.push("status = @outcome");
    const stmt = this.#prepare(`SELECT 1 FROM outcomes WHERE ${parts.join(" AND ")} LIMIT 1`).pluck();
    return (seq) => stmt.get({ seq, handler: q.handler ?? null, outcome: q.outcome ?? null }) !== undefined;
  }

  // Both read the counts the schema's triggers keep (schema.ts), never the deliveries:
  // at most minutes x repositories x statuses rows, however busy the window was.
  async deliveryActivity(since: number, repositories?: readonly string[]): Promise<ActivityRow[]> {
    const params: Record<string, unknown> = { since };
    const where = [
      "m.minute >= @since",
      "m.count > 0",
      ...scope(repositories, params).map((c) => c.replace("d.repository", "m.repository")),
    ];
    return this.#prepare(
      `SELECT m.minute AS minute, m.status AS status, sum(m.count) AS count FROM delivery_minutes m
         WHERE ${where.join(" AND ")} GROUP BY m.minute, m.status HAVING sum(m.count) > 0 ORDER BY m.minute`,
    ).all(params) as ActivityRow[];
  }

  async decisionsOf(ids: readonly string[]): Promise<Map<string, DecisionLine[]>> {
    if (ids.length === 0) return new Map();
    const rows = this.#prepare(
      `SELECT d.id AS id, o.handler, o.status, substr(o.detail, 1, ${DETAIL_READ}) AS detail
       FROM deliveries d JOIN outcomes o ON o.delivery = d.seq
       WHERE d.id IN (SELECT value FROM json_each(?)) ORDER BY d.id, o.handler`,
    ).all(JSON.stringify(ids.slice(0, MAX_PAGE))) as OutcomeLineRow[];
    return decisionsByDelivery(rows);
  }

  async summariesOf(ids: readonly string[]): Promise<DeliverySummary[]> {
    if (ids.length === 0) return [];
    const rows = this.#prepare(
      `SELECT ${SUMMARY_COLUMNS} FROM deliveries d WHERE d.id IN (SELECT value FROM json_each(?))`,
    ).all(JSON.stringify(ids.slice(0, MAX_PAGE))) as SummaryRow[];
    return rows.map(summaryOf);
  }

  async countDead(repositories?: readonly string[]): Promise<number> {
    const params: Record<string, unknown> = {};
    const where = scope(repositories, params).map((c) => c.replace("d.repository", "l.repository"));
    return this.#prepare(
      `SELECT coalesce(sum(l.count), 0) FROM dead_letters l ${where.length ? `WHERE ${where.join(" AND ")}` : ""}`,
    )
      .pluck()
      .get(params) as number;
  }
}
