// Rows of the PostgreSQL store as the records of the store contract (src/store/records.ts),
// and the lease tokens its claims write (named after this process, as every backend's are).
import { newLeaseToken } from "../../lifecycle/process-owner.js";
import type {
  DeliveryStatus,
  HandlerOutcomeRecord,
  Outcome,
  StoredDelivery,
  StoredTask,
  TaskStatus,
} from "../records.js";

/**
 * `host/pid/`: a claim's token is this and a uuid made by the server (one per row a batch claim
 * leases), the same shape as newLeaseToken's, so a dead owner is recognised (recoverOrphans).
 */
export const tokenOwner = newLeaseToken().replace(/[^/]+$/, "");

/**
 * SQL: a delivery's columns as DeliveryRow reads them, from `deliveries d LEFT JOIN queue q`: while
 * it waits or runs its queue row says whether it is leased (running), its attempts so far and
 * when it is due; a finished one has no queue row.
 */
export const deliveryColumns = `d.id, d.event, d.action, d.installation_id, d.repository, d.headers, d.payload, d.received_at,
  CASE WHEN q.lease_token IS NOT NULL THEN 'running' ELSE d.status END AS status,
  coalesce(q.attempts, d.attempts) AS attempts, coalesce(q.run_at, d.updated_at) AS next_run_at,
  d.last_error, d.updated_at`;

export interface DeliveryRow {
  id: string;
  event: string;
  action: string | null;
  installation_id: string | null;
  repository: string | null;
  headers: string;
  payload: string;
  received_at: Date;
  status: DeliveryStatus;
  attempts: number;
  next_run_at: Date;
  last_error: string | null;
  updated_at: Date;
}

export function toDelivery(r: DeliveryRow): StoredDelivery {
  return {
    id: r.id,
    event: r.event,
    action: r.action ?? undefined,
    installationId: r.installation_id === null ? undefined : Number(r.installation_id),
    repository: r.repository ?? undefined,
    headers: JSON.parse(r.headers) as Record<string, string>,
    payload: r.payload,
    receivedAt: r.received_at,
    status: r.status,
    attempts: r.attempts,
    nextRunAt: r.next_run_at,
    lastError: r.last_error ?? undefined,
    updatedAt: r.updated_at,
  };
}

/** An outcome as `outcomesJson` aggregates it (times in ms since the epoch). */
export interface OutcomeJson {
  handler: string;
  status: Outcome["status"];
  detail: string | null;
  retryable: boolean;
  attempts: number;
  seconds: number;
  at: number;
}

/** SQL: the outcomes of the delivery `id` names, by handler, as one JSON array. */
export function outcomesJson(s: string, id: string): string {
  return `(SELECT coalesce(json_agg(json_build_object('handler', o.handler, 'status', o.status, 'detail', o.detail,
      'retryable', o.retryable, 'attempts', o.attempts, 'seconds', o.seconds,
      'at', (extract(epoch FROM o.updated_at) * 1000)::bigint) ORDER BY o.handler), '[]')
    FROM ${s}.outcomes o WHERE o.delivery_id = ${id})`;
}

export function toOutcomes(list: OutcomeJson[]): HandlerOutcomeRecord[] {
  return list.map((o) => ({
    handler: o.handler,
    status: o.status,
    detail: o.detail ?? undefined,
    retryable: o.retryable,
    attempts: o.attempts,
    seconds: o.seconds,
    updatedAt: new Date(o.at),
  }));
}

export interface TaskRow {
  handler: string;
  key: string;
  run_at: Date;
  data: string;
  installation_id: string | null;
  status: TaskStatus;
  attempts: number;
  last_error: string | null;
  generation: number;
  lease_token: string | null;
}

export function toTask(r: TaskRow): StoredTask {
  return {
    handler: r.handler,
    key: r.key,
    runAt: r.run_at,
    data: JSON.parse(r.data) as unknown,
    installationId: r.installation_id === null ? undefined : Number(r.installation_id),
    status: r.status,
    attempts: r.attempts,
    lastError: r.last_error ?? undefined,
  };
}
