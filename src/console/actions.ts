// What people did to deliveries through the console (replay, acknowledge), recorded when they did
// it: per delivery, so its page lists who did what and when beside its attempts, and in the audit
// trail. A delivery's page states only what is recorded here; an action that failed says so.
import { randomBytes } from "node:crypto";
import { MAX_PAGE } from "../store/browse.js";
import type { ConsoleStore } from "./types.js";

export type ActionKind = "replay" | "acknowledge";

export interface ActionRecord {
  action: ActionKind;
  login: string;
  at: number;
  /** Whether it took effect (a replay of a running delivery does not). */
  ok: boolean;
  /** Why not, or what it was part of (`bulk`: a replay of every matching dead letter). */
  note?: string;
}

/** As long as dead letters and finished deliveries are kept, and then some. */
const ACTION_TTL_MS = 30 * 86_400_000;
/** The newest shown per delivery: a page stays bounded however often someone clicks. */
export const MAX_ACTIONS_SHOWN = 50;

const prefixOf = (deliveryId: string) => `console:action:${deliveryId}:`;

const ACKNOWLEDGED_PREFIX = "console:acknowledged:";

/** The record of a dead letter someone acknowledged (it must not run again): the dead page hides it. */
export function acknowledgedKey(deliveryId: string): string {
  return `${ACKNOWLEDGED_PREFIX}${deliveryId}`;
}

/** Who acknowledged a dead letter, when, and why (as they wrote it). */
export interface Acknowledgement {
  login: string;
  at: number;
  reason?: string;
}

/** A reason longer than this is cut: it is a line in a list, not a report. */
export const MAX_REASON_CHARS = 200;

/**
 * The acknowledgement that stands for the dead letter as it is now: one given before the delivery
 * last changed (replayed and dead again since) was about an earlier failure and no longer holds.
 */
export async function acknowledgementOf(
  store: ConsoleStore,
  d: { id: string; updatedAt: Date },
): Promise<Acknowledgement | undefined> {
  const a = await store.kv.get<Acknowledgement>(acknowledgedKey(d.id));
  return a && a.at >= d.updatedAt.getTime() ? a : undefined;
}

/** Acknowledgements the overview's count reads at most (each one's delivery is read, a page at a time). */
export const MAX_ACKNOWLEDGED_COUNTED = 2_000;

/**
 * Dead letters of `repositories` whose acknowledgement stands (as acknowledgementOf decides), so the
 * overview counts apart what was left dead on purpose; `more` when there were more acknowledgements than it read.
 */
export async function countAcknowledged(
  store: ConsoleStore,
  repositories: readonly string[],
): Promise<{ count: number; more: boolean }> {
  const all = await store.kv.list<Acknowledgement>(ACKNOWLEDGED_PREFIX);
  const read = all.slice(0, MAX_ACKNOWLEDGED_COUNTED);
  const scope = new Set(repositories);
  const chunks = Array.from({ length: Math.ceil(read.length / MAX_PAGE) }, (_, i) =>
    read.slice(i * MAX_PAGE, (i + 1) * MAX_PAGE),
  );
  const counts = await Promise.all(
    chunks.map(async (chunk) => {
      const at = new Map(chunk.map((r) => [r.key.slice(ACKNOWLEDGED_PREFIX.length), r.value.at]));
      const summaries = await store.browse.summariesOf([...at.keys()]);
      return summaries.filter(
        (d) => d.status === "dead" && scope.has(d.repository ?? "") && at.get(d.id)! >= d.updatedAt.getTime(),
      ).length;
    }),
  );
  return { count: counts.reduce((a, b) => a + b, 0), more: all.length > read.length };
}

/** Records that a dead letter must not run: in its history, the audit trail and the acknowledgement record. */
export async function acknowledge(store: ConsoleStore, deliveryId: string, ack: Acknowledgement): Promise<void> {
  await store.kv.set(acknowledgedKey(deliveryId), ack, { ttlMs: ACTION_TTL_MS });
  await recordAction(store, deliveryId, {
    action: "acknowledge",
    login: ack.login,
    at: ack.at,
    ok: true,
    ...(ack.reason ? { note: ack.reason } : {}),
  });
}

export async function recordAction(store: ConsoleStore, deliveryId: string, record: ActionRecord): Promise<void> {
  // Time first, zero-padded: the prefix listing returns them in the order they happened.
  const key = `${prefixOf(deliveryId)}${String(record.at).padStart(15, "0")}:${randomBytes(4).toString("hex")}`;
  await store.kv.set(key, record, { ttlMs: ACTION_TTL_MS });
  await store.kv.audit({
    kind: `console_${record.action}`,
    source: "console",
    details: {
      delivery: deliveryId,
      login: record.login,
      ok: record.ok,
      ...(record.note ? { note: record.note } : {}),
    },
    at: new Date(record.at),
  });
}

/** Actions on a delivery, oldest first (the newest MAX_ACTIONS_SHOWN). */
export async function actionsOf(store: ConsoleStore, deliveryId: string): Promise<ActionRecord[]> {
  const rows = await store.kv.list<ActionRecord>(prefixOf(deliveryId));
  return rows.slice(-MAX_ACTIONS_SHOWN).map((r) => r.value);
}
