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

export const MAX_PAGE = 200;

export function pageLimit(limit: number): number {
  return Math.max(1, Math.min(MAX_PAGE, Math.floor(limit) || 1));
}
