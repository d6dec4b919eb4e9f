// The console's reads of the PostgreSQL store: newest first over the receipt-time indexes
// (every delivery, by repository, by event, dead letters), a page at a time through a keyset
// cursor (receipt time, id), so a page costs the same however many deliveries are kept.
import type pg from "pg";
import { pageLimit, type ActivityRow, type DeliveryPage, type DeliveryQuery, type DeliverySummary } from "../browse.js";
import { DETAIL_READ, decisionsByDelivery, MAX_PAGE, type DecisionLine, type OutcomeLineRow } from "../browse.js";
import type { BrowsePart } from "../contract.js";
import type { DeliveryStatus } from "../records.js";

/** Deliveries one outcome-filtered page walks at most (as the Redis store's). */
const MAX_OUTCOME_SCAN = 10_000;
/** The overview counts at most this many recent deliveries (as the other backends do). */
const MAX_ACTIVITY = 20_000;

interface SummaryRow {
  id: string;
  event: string;
  action: string | null;
  repository: string | null;
  installation_id: string | null;
  status: DeliveryStatus;
  attempts: number;
  received_at: Date;
  updated_at: Date;
  last_error: string | null;
  ms: string;
}

function parseCursor(cursor: string | undefined): { ms: number; id: string } | undefined {
  const m = cursor ? /^(\d+):(.+)$/s.exec(cursor) : null;
  return m ? { ms: Number(m[1]), id: m[2]! } : undefined;
}

function summaryOf(r: SummaryRow): DeliverySummary {
  return {
    id: r.id,
    event: r.event,
    action: r.action ?? undefined,
    repository: r.repository ?? undefined,
    installationId: r.installation_id === null ? undefined : Number(r.installation_id),
    status: r.status,
    attempts: r.attempts,
    receivedAt: r.received_at,
    updatedAt: r.updated_at,
    lastError: r.last_error ?? undefined,
  };
}

/** WHERE clauses and their parameters, numbered as they are added. */
class Conditions {
  readonly where: string[] = [];
  readonly params: unknown[] = [];
  /** The placeholder of a new parameter. */
  param(value: unknown): string {
    return `$${this.params.push(value)}`;
  }
  add(sql: (p: string) => string, value: unknown): void {
    this.where.push(sql(this.param(value)));
  }
  get sql(): string {
    return this.where.length ? `WHERE ${this.where.join(" AND ")}` : "";
  }
}

/** A reader limited to some repositories sees deliveries without one only when "" is among them (as on the other backends). */
function readable(c: Conditions, repositories: readonly string[] | undefined): void {
  if (repositories) c.add((p) => `coalesce(d.repository, '') = ANY(${p}::text[])`, [...repositories]);
}

/**
 * A status as stored: a delivery whose queue row is leased is running, whatever its row says
 * (queued, or failed when it is a retry); finished ones have no queue row.
 */
function withStatus(c: Conditions, status: DeliveryStatus): void {
  if (status === "running") c.where.push("q.lease_token IS NOT NULL");
  else if (status === "queued" || status === "failed")
    c.add((p) => `d.status = ${p} AND q.lease_token IS NULL`, status);
  else c.add((p) => `d.status = ${p}`, status);
}

/** The summary's columns, from `deliveries d LEFT JOIN queue q`. */
const summaryColumns = `d.id, d.event, d.action, d.repository, d.installation_id,
  CASE WHEN q.lease_token IS NOT NULL THEN 'running' ELSE d.status END AS status, coalesce(q.attempts, d.attempts) AS attempts,
  d.received_at, d.updated_at, d.last_error, (extract(epoch FROM d.received_at) * 1000)::bigint AS ms`;

export class PostgresBrowse implements BrowsePart {
  constructor(
    private readonly pool: pg.Pool,
    private readonly s: string,
  ) {}

  async browseDeliveries(q: DeliveryQuery): Promise<DeliveryPage> {
    const limit = pageLimit(q.limit);
    const c = new Conditions();
    if (q.event !== undefined) c.add((p) => `d.event = ${p}`, q.event);
    if (q.repository !== undefined) c.add((p) => `d.repository = ${p}`, q.repository);
    if (q.status !== undefined) withStatus(c, q.status);
    if (q.since !== undefined) c.add((p) => `d.received_at >= ${p}`, new Date(q.since));
    if (q.until !== undefined) c.add((p) => `d.received_at < ${p}`, new Date(q.until));
    readable(c, q.repositories);
    const cursor = parseCursor(q.cursor);
    if (cursor)
      c.where.push(`(d.received_at, d.id) < (${c.param(new Date(cursor.ms))}::timestamptz, ${c.param(cursor.id)})`);
    if (q.handler !== undefined || q.outcome !== undefined) return this.#byOutcome(q, c, limit);
    const { rows } = await this.pool.query<SummaryRow>(
      `SELECT ${summaryColumns} FROM ${this.s}.deliveries d LEFT JOIN ${this.s}.queue q ON q.id = d.id ${c.sql}
       ORDER BY d.received_at DESC, d.id DESC LIMIT ${limit + 1}`,
      c.params,
    );
    const items = rows.slice(0, limit);
    const last = rows.length > limit ? items[items.length - 1] : undefined;
    return { items: items.map(summaryOf), next: last ? `${last.ms}:${last.id}` : undefined };
  }

  /**
   * An outcome filter walks the deliveries newest first and probes each one's outcomes (a scalar
   * subquery, which the planner keeps per row rather than joining every matching outcome and
   * sorting them: thousands of failed outcomes made that a scan of every delivery), stopping at a
   * full page or after MAX_OUTCOME_SCAN deliveries: a rare outcome answers a short page with a
   * cursor where the walk stopped, not a scan of everything. The walk reads the queue only for a
   * status filter; the page's statuses are read for the deliveries it keeps.
   */
  async #byOutcome(q: DeliveryQuery, c: Conditions, limit: number): Promise<DeliveryPage> {
    const queue = q.status === undefined ? "" : `LEFT JOIN ${this.s}.queue q ON q.id = d.id`;
    const walk = `SELECT d.id, d.event, d.action, d.repository, d.installation_id, d.status, d.attempts, d.received_at,
        d.updated_at, d.last_error, (extract(epoch FROM d.received_at) * 1000)::bigint AS ms
      FROM ${this.s}.deliveries d ${queue} ${c.sql} ORDER BY d.received_at DESC, d.id DESC`;
    const walkParams = [...c.params];
    const o: string[] = ["o.delivery_id = d.id"];
    if (q.handler !== undefined) o.push(`o.handler = ${c.param(q.handler)}`);
    if (q.outcome !== undefined) o.push(`o.status = ${c.param(q.outcome)}`);
    const { rows } = await this.pool.query<SummaryRow>(
      `SELECT ${summaryColumns} FROM (
         SELECT * FROM (${walk} LIMIT ${MAX_OUTCOME_SCAN}) d
         WHERE (SELECT true FROM ${this.s}.outcomes o WHERE ${o.join(" AND ")} LIMIT 1)
         ORDER BY d.received_at DESC, d.id DESC LIMIT ${limit + 1}
       ) d LEFT JOIN ${this.s}.queue q ON q.id = d.id
       ORDER BY d.received_at DESC, d.id DESC`,
      c.params,
    );
    const items = rows.slice(0, limit);
    if (rows.length > limit) {
      const last = items[items.length - 1]!;
      return { items: items.map(summaryOf), next: `${last.ms}:${last.id}` };
    }
    // A short page: the walk went on to its bound when there is a delivery at the bound.
    const bound = await this.pool.query<SummaryRow>(`${walk} OFFSET ${MAX_OUTCOME_SCAN - 1} LIMIT 1`, walkParams);
    const end = bound.rows[0];
    return { items: items.map(summaryOf), next: end ? `${end.ms}:${end.id}` : undefined };
  }

  /** Per-minute counts by status of the deliveries received since `since` (the newest MAX_ACTIVITY at most). */
  async deliveryActivity(since: number, repositories?: readonly string[]): Promise<ActivityRow[]> {
    const c = new Conditions();
    c.add((p) => `d.received_at >= ${p}`, new Date(since));
    readable(c, repositories);
    // The queue (deliveries waiting or running) is joined to the recent ones, not walked per row.
    const { rows } = await this.pool.query<{ minute: string; status: DeliveryStatus; count: number }>(
      `SELECT (floor(extract(epoch FROM recent.received_at) / 60) * 60000)::bigint AS minute,
         CASE WHEN q.lease_token IS NOT NULL THEN 'running' ELSE recent.status END AS status, count(*)::int AS count
       FROM (SELECT d.id, d.received_at, d.status FROM ${this.s}.deliveries d ${c.sql}
         ORDER BY d.received_at DESC LIMIT ${MAX_ACTIVITY}) recent
       LEFT JOIN ${this.s}.queue q ON q.id = recent.id
       GROUP BY 1, 2 ORDER BY 1, 2`,
      c.params,
    );
    return rows.map((r) => ({ minute: Number(r.minute), status: r.status, count: r.count }));
  }

  async decisionsOf(ids: readonly string[]): Promise<Map<string, DecisionLine[]>> {
    if (ids.length === 0) return new Map();
    const { rows } = await this.pool.query<OutcomeLineRow>(
      `SELECT delivery_id AS id, handler, status, left(detail, ${DETAIL_READ}) AS detail FROM ${this.s}.outcomes
       WHERE delivery_id = ANY($1::text[]) ORDER BY delivery_id, handler COLLATE "C"`,
      [ids.slice(0, MAX_PAGE)],
    );
    return decisionsByDelivery(rows);
  }

  async summariesOf(ids: readonly string[]): Promise<DeliverySummary[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.pool.query<SummaryRow>(
      `SELECT ${summaryColumns}
       FROM ${this.s}.deliveries d LEFT JOIN ${this.s}.queue q ON q.id = d.id WHERE d.id = ANY($1::text[])`,
      [ids.slice(0, MAX_PAGE)],
    );
    return rows.map(summaryOf);
  }

  async countDead(repositories?: readonly string[]): Promise<number> {
    const c = new Conditions();
    c.add((p) => `d.status = ${p}`, "dead");
    readable(c, repositories);
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.s}.deliveries d ${c.sql}`,
      c.params,
    );
    return rows[0]!.n;
  }
}
