// Reading deliveries for people (the console): filtered, newest first, a page at a time
// through an opaque cursor, over indexes, so a page costs the same with 100 or 100,000
// deliveries kept. The queries and pages of the store's `browse` part (contract.ts); bodies
// are not read (a page shows summaries).
import type { DeliveryStatus, HandlerOutcomeRecord } from "./records.js";

export interface DeliveryQuery {
  event?: string;
  /** Full name, as the payload has it (`owner/repo`). */
  repository?: string;
  status?: DeliveryStatus;
  /** Deliveries a handler ran on (with `outcome`: that handler's outcome). */
  handler?: string;
  /** A handler outcome: `done`, `skipped`, `failed`. */
  outcome?: HandlerOutcomeRecord["status"];
  /** Received at or after / before (ms since the epoch). */
  since?: number;
  until?: number;
  /**
   * Only these repositories: the ones the reader may see. Undefined: every delivery,
   * including those with no repository (installation events).
   */
  repositories?: readonly string[];
  /** `next` of the previous page. */
  cursor?: string;
  /** 1..200 */
  limit: number;
}

export interface DeliverySummary {
  id: string;
  event: string;
  action: string | undefined;
  repository: string | undefined;
  installationId: number | undefined;
  status: DeliveryStatus;
  attempts: number;
  receivedAt: Date;
  updatedAt: Date;
  lastError: string | undefined;
}

export interface DeliveryPage {
  items: DeliverySummary[];
  /** Cursor of the next (older) page; undefined on the last one. */
  next: string | undefined;
}

export interface ActivityRow {
  /** Start of the minute, ms since the epoch. */
  minute: number;
  status: DeliveryStatus;
  count: number;
}

/** What one handler decided about a delivery, in a line a list can show. */
export interface DecisionLine {
  handler: string;
  status: HandlerOutcomeRecord["status"];
  /** The first line of its summary (done), reason (skipped) or error (failed), cut to MAX_DECISION_CHARS. */
  line: string | undefined;
}

/** A decision line is cut to this many characters (stores read no more of the detail than a few times this). */
export const MAX_DECISION_CHARS = 160;
/** Characters of an outcome's detail a store reads for its line: enough for a first line, never a whole report. */
export const DETAIL_READ = 4 * MAX_DECISION_CHARS;

export function decisionLine(
  handler: string,
  status: DecisionLine["status"],
  detail: string | null | undefined,
): DecisionLine {
  const first = (detail ?? "")
    .split("\n")
    .find((l) => l.trim() !== "")
    ?.trim();
  const line = first && first.length > MAX_DECISION_CHARS ? `${first.slice(0, MAX_DECISION_CHARS - 1)}…` : first;
  return { handler, status, line: line || undefined };
}

/** An outcome as the SQL stores read it for its decision line. */
export interface OutcomeLineRow {
  id: string;
  handler: string;
  status: DecisionLine["status"];
  detail: string | null;
}

/** Outcome rows (of several deliveries, in handler order) as each delivery's decision lines. */
export function decisionsByDelivery(rows: readonly OutcomeLineRow[]): Map<string, DecisionLine[]> {
  const out = new Map<string, DecisionLine[]>();
  for (const r of rows) {
    const list = out.get(r.id) ?? [];
    list.push(decisionLine(r.handler, r.status, r.detail));
    out.set(r.id, list);
  }
  return out;
}

export const MAX_PAGE = 200;

export function pageLimit(limit: number): number {
  return Math.max(1, Math.min(MAX_PAGE, Math.floor(limit) || 1));
}
