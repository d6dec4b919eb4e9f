// The console's reads of the SQLite store: keyset pages (received_at, rowid) over the
// indexes of schema version 3, newest first, summaries only.
import type { Database } from "better-sqlite3";
import type { QueueRow } from "./sqlite-deliveries.js";
import { pageLimit, type ActivityRow, type DeliveryBrowser, type DeliveryPage, type DeliveryQuery } from "./browse.js";

type SummaryRow = Omit<QueueRow, "next_run_at" | "lease_token"> & { rid: number };

function parseCursor(cursor: string | undefined): { at: number; rid: number } | undefined {
  const m = cursor ? /^(\d+)\.(\d+)$/.exec(cursor) : null;
  return m ? { at: Number(m[1]), rid: Number(m[2]) } : undefined;
}

/** WHERE clauses shared by the page and the counts; `params` gets the values. */
function scope(repositories: readonly string[] | undefined, params: Record<string, unknown>): string[] {
  if (repositories === undefined) return [];
  params.repos = JSON.stringify(repositories);
  return ["d.repository IN (SELECT value FROM json_each(@repos))"];
}

export class SqliteBrowse implements DeliveryBrowser {
  constructor(private readonly db: Database) {}

  async browseDeliveries(q: DeliveryQuery): Promise<DeliveryPage> {
    const limit = pageLimit(q.limit);
    const params: Record<string, unknown> = { limit: limit + 1 };
    const where = scope(q.repositories, params);
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
    if (q.handler !== undefined || q.outcome !== undefined) {
      // One primary-key probe per candidate row, not a scan of the outcomes.
      const parts = ["o.delivery_id = d.id"];
      if (q.handler !== undefined) parts.push("o.handler = @handler");
      if (q.outcome !== undefined) parts.push("o.status = @outcome");
      where.push(`EXISTS (SELECT 1 FROM outcomes o WHERE ${parts.join(" AND ")})`);
      if (q.handler !== undefined) params.handler = q.handler;
      if (q.outcome !== undefined) params.outcome = q.outcome;
    }
    const after = parseCursor(q.cursor);
    if (after) {
      where.push("(d.received_at < @at OR (d.received_at = @at AND d.rowid < @rid))");
      Object.assign(params, after);
    }
    const sql = `SELECT d.rowid AS rid, d.id, d.event, d.action, d.installation_id, d.repository, d.received_at, d.status,
        d.attempts, d.last_error, d.updated_at FROM deliveries d
      ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
      ORDER BY d.received_at DESC, d.rowid DESC LIMIT @limit`;
    const rows = this.db.prepare(sql).all(params) as SummaryRow[];
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map((r) => ({
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
      })),
      next: more && last ? `${last.received_at}.${last.rid}` : undefined,
    };
  }

  async deliveryActivity(since: number, repositories?: readonly string[]): Promise<ActivityRow[]> {
    const params: Record<string, unknown> = { since };
    const where = ["d.received_at >= @since", ...scope(repositories, params)];
    return this.db
      .prepare(
        `SELECT (d.received_at / 60000) * 60000 AS minute, d.status AS status, count(*) AS count FROM deliveries d
         WHERE ${where.join(" AND ")} GROUP BY minute, d.status ORDER BY minute`,
      )
      .all(params) as ActivityRow[];
  }

  async countDead(repositories?: readonly string[]): Promise<number> {
    const params: Record<string, unknown> = {};
    const where = ["d.status = 'dead'", ...scope(repositories, params)];
    return this.db.prepare(`SELECT count(*) FROM deliveries d WHERE ${where.join(" AND ")}`).pluck().get(params) as number;
  }
}
