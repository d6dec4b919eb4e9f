// `steward deliveries`: inspect and replay stored deliveries (dead letters included), in the
// service's own store: Redis when STEWARD_REDIS_URL is set, else SQLite in STEWARD_DATA_DIR.
import { ConfigError, loadStoreSettings } from "../../config/env.js";
import type { StoreSettings } from "../../config/types.js";
import { parseDuration } from "../../policy/patterns.js";
import { openOperatorStore, sandboxFallback, storeLocation, type OperatorStore } from "../operator-store.js";
import type {
  AttemptRecord,
  DeliveryFilter,
  DeliveryRecord,
  DeliveryStatus,
  HandlerOutcomeRecord,
  StoredDelivery,
} from "../../store/records.js";
import { DETAIL_FIELD } from "../../store/recorded.js";

const statuses: readonly DeliveryStatus[] = ["queued", "running", "done", "failed", "dead"];
export const usage = `usage: steward deliveries list [--status ${statuses.join("|")}] [--event EVENT] [--since WHEN] [--limit N] [--json]
       steward deliveries show ID [--payload] [--json]
       steward deliveries replay ID... [--json]
       steward deliveries replay --status dead|failed|done [--event EVENT] [--since WHEN] [--limit N] [--json]
  WHEN is a time (2026-11-24T06:00:00Z) or how long ago (30m, 24h, 7d).
  Uses the service's store: Redis when STEWARD_REDIS_URL is set, else STEWARD_DATA_DIR (default ./.steward).
  A replayed delivery runs again through every handler (a running service picks it up; otherwise its next start).`;

class UsageError extends Error {}

interface Parsed {
  positional: string[];
  flags: Map<string, string | true>;
}

function parse(args: string[], valued: readonly string[], switches: readonly string[]): Parsed {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("--")) {
      positional.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    if (switches.includes(name)) flags.set(name, true);
    else if (valued.includes(name)) {
      const value = inline ?? args[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      flags.set(name, value);
    } else throw new UsageError(`unknown option --${name}`);
  }
  return { positional, flags };
}

function eventName(d: StoredDelivery): string {
  return d.action ? `${d.event}.${d.action}` : d.event;
}

function oneLine(text: string, max = 120): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function formatListLine(d: StoredDelivery): string {
  const parts = [
    d.id,
    d.status.padEnd(7),
    eventName(d),
    d.repository ?? "-",
    `attempts=${d.attempts}`,
    `received=${d.receivedAt.toISOString()}`,
  ];
  if (d.status === "failed") parts.push(`retry=${d.nextRunAt.toISOString()}`);
  if (d.lastError) parts.push(`error="${oneLine(d.lastError, 80)}"`);
  return parts.join("  ");
}

/** An outcome's detail under the name of the field it came from (summary, reason, error). */
function detailText(o: Pick<HandlerOutcomeRecord, "status" | "detail">): string {
  return o.detail ? `  ${DETAIL_FIELD[o.status]}: ${oneLine(o.detail, 400)}` : "";
}

function formatOutcome(o: HandlerOutcomeRecord): string {
  const detail = detailText(o);
  const retry = o.status === "failed" && !o.retryable ? " (not retryable)" : "";
  return `  ${o.handler.padEnd(14)} ${o.status}${retry}  attempts=${o.attempts}  ${o.seconds.toFixed(3)}s${detail}`;
}

function formatAttempt(a: AttemptRecord): string {
  const detail = detailText(a);
  return `  ${a.at.toISOString()}  ${a.handler.padEnd(14)} attempt ${a.attempt}  ${a.status}${detail}`;
}

export function formatShow(
  found: Pick<DeliveryRecord, "delivery" | "outcomes"> & { attempts?: AttemptRecord[] },
  withPayload: boolean,
): string {
  const { delivery: d, outcomes } = found;
  const lines = [
    `delivery ${d.id}`,
    `  event:        ${eventName(d)}`,
    `  status:       ${d.status}${d.status === "failed" ? ` (retry at ${d.nextRunAt.toISOString()})` : ""}`,
    `  attempts:     ${d.attempts}`,
    `  received:     ${d.receivedAt.toISOString()}`,
    `  updated:      ${d.updatedAt.toISOString()}`,
    `  installation: ${d.installationId ?? "-"}`,
    `  repository:   ${d.repository ?? "-"}`,
  ];
  if (d.lastError) lines.push(`  last error:   ${d.lastError}`);
  lines.push("headers:");
  const headers = Object.entries(d.headers).sort(([a], [b]) => a.localeCompare(b));
  if (headers.length === 0) lines.push("  (none)");
  for (const [name, value] of headers) lines.push(`  ${name}: ${value}`);
  lines.push("outcomes:");
  if (outcomes.length === 0) lines.push("  (none yet)");
  for (const o of outcomes) lines.push(formatOutcome(o));
  lines.push("attempts:");
  if (!found.attempts?.length) lines.push("  (none yet)");
  for (const a of found.attempts ?? []) lines.push(formatAttempt(a));
  if (withPayload) {
    lines.push("payload:");
    let text = d.payload;
    try {
      text = JSON.stringify(JSON.parse(d.payload), null, 2);
    } catch {
      // Shown as stored.
    }
    lines.push(text);
  }
  return lines.join("\n");
}

let settings: StoreSettings | undefined;

function where(store?: OperatorStore): string {
  return storeLocation(settings!, store);
}

async function withStore<T>(fn: (store: OperatorStore) => Promise<T>): Promise<T | undefined> {
  const store = await openOperatorStore(settings!, { mustExist: true });
  if (!store) return undefined;
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** `--since`: an ISO time, or how long ago (`24h`). */
function parseSince(text: string): Date {
  const ago = /^\d+(ms|s|m|h|d)$/.test(text) ? parseDuration(text) : undefined;
  if (ago !== undefined) return new Date(Date.now() - ago);
  const at = Date.parse(text);
  if (!Number.isFinite(at))
    throw new UsageError(`--since must be a time (2026-11-24T06:00:00Z) or how long ago (24h), not "${text}"`);
  return new Date(at);
}

function filterOf(flags: Map<string, string | true>, defaultLimit: number): DeliveryFilter {
  const status = flags.get("status") as string | undefined;
  if (status !== undefined && !statuses.includes(status as DeliveryStatus)) {
    throw new UsageError(`--status must be one of ${statuses.join(", ")}`);
  }
  const limitText = flags.get("limit") as string | undefined;
  const limit = limitText === undefined ? defaultLimit : Number(limitText);
  if (!Number.isInteger(limit) || limit <= 0) throw new UsageError("--limit must be a positive whole number");
  const event = flags.get("event") as string | undefined;
  const since = flags.get("since") as string | undefined;
  return {
    ...(status ? { status: status as DeliveryStatus } : {}),
    ...(event ? { event } : {}),
    ...(since ? { since: parseSince(since) } : {}),
    limit,
  };
}

/** A delivery for --json: everything but the payload (show --payload adds it). */
function deliveryJson(d: StoredDelivery, withPayload = false): Record<string, unknown> {
  const { payload, ...rest } = d;
  return withPayload ? { ...rest, payload } : rest;
}

function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

async function list(args: string[]): Promise<number> {
  const { positional, flags } = parse(args, ["status", "event", "limit", "since"], ["json"]);
  if (positional.length > 0) throw new UsageError(`unexpected argument "${positional[0]}"`);
  const filter = filterOf(flags, 100);
  const rows = (await withStore((s) => s.deliveries.listDeliveries(filter))) ?? [];
  if (flags.has("json")) {
    printJson(rows.map((d) => deliveryJson(d)));
    return 0;
  }
  if (rows.length === 0) {
    process.stdout.write(
      `no deliveries${filter.status || filter.event || filter.since ? " match" : ""} in ${where()}\n`,
    );
    return 0;
  }
  process.stdout.write(rows.map(formatListLine).join("\n") + "\n");
  return 0;
}

function oneId(positional: string[]): string {
  if (positional.length !== 1) throw new UsageError("expected exactly one delivery ID");
  return positional[0]!;
}

async function show(args: string[]): Promise<number> {
  const { positional, flags } = parse(args, [], ["payload", "json"]);
  const id = oneId(positional);
  const found = await withStore((s) => s.deliveries.getDelivery(id));
  if (!found) {
    process.stderr.write(`steward deliveries: no stored delivery ${id} in ${where()}\n`);
    return 1;
  }
  if (flags.has("json")) {
    printJson({
      delivery: deliveryJson(found.delivery, flags.has("payload")),
      outcomes: found.outcomes,
      attempts: found.attempts,
    });
    return 0;
  }
  process.stdout.write(formatShow(found, flags.has("payload")) + "\n");
  return 0;
}

type ReplayResult = { replayed: string[]; running: string[]; missing: string[] };

async function replayIds(store: OperatorStore, ids: readonly string[]): Promise<ReplayResult> {
  const result: ReplayResult = { replayed: [], running: [], missing: [] };
  for (const id of ids) {
    if (!(await store.deliveries.getDelivery(id))) result.missing.push(id);
    else if (await store.deliveries.replayDelivery(id)) result.replayed.push(id);
    else result.running.push(id);
  }
  return result;
}

async function replay(args: string[]): Promise<number> {
  const { positional, flags } = parse(args, ["status", "event", "limit", "since"], ["json"]);
  const bulk = flags.has("status");
  if (bulk && positional.length > 0) throw new UsageError("give delivery IDs or --status, not both");
  if (!bulk && positional.length === 0)
    throw new UsageError("expected delivery IDs, or --status dead for every dead delivery");
  if (!bulk && (flags.has("since") || flags.has("event") || flags.has("limit")))
    throw new UsageError("--since, --event and --limit select deliveries with --status");
  const filter = bulk ? filterOf(flags, 10_000) : undefined;
  if (filter?.status === "running" || filter?.status === "queued")
    throw new UsageError(`deliveries that are ${filter.status} cannot be replayed`);
  const result =
    (await withStore(async (s) =>
      replayIds(s, filter ? (await s.deliveries.listDeliveries(filter)).map((d) => d.id) : positional),
    )) ?? ({ replayed: [], running: [], missing: bulk ? [] : [...positional] } satisfies ReplayResult);
  if (flags.has("json")) printJson(result);
  else {
    for (const id of result.replayed) process.stdout.write(`delivery ${id} queued again for every handler\n`);
    for (const id of result.running)
      process.stderr.write(`steward deliveries: delivery ${id} is running now; replay it when it has finished\n`);
    for (const id of result.missing)
      process.stderr.write(`steward deliveries: no stored delivery ${id} in ${where()}\n`);
    if (bulk)
      process.stdout.write(
        `${result.replayed.length} deliveries queued again (a running service picks them up; otherwise its next start does)\n`,
      );
    else if (result.replayed.length > 0)
      process.stdout.write("a running service picks them up; otherwise its next start does\n");
  }
  return result.running.length + result.missing.length > 0 ? 1 : 0;
}

export async function run(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const [sub, ...rest] = args;
  try {
    settings = sandboxFallback(loadStoreSettings(env), env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`steward deliveries: ${e.message}\n`);
    return 2;
  }
  try {
    switch (sub) {
      case "list":
        return await list(rest);
      case "show":
        return await show(rest);
      case "replay":
        return await replay(rest);
      case undefined:
      case "--help":
      case "-h":
      case "help":
        process.stdout.write(usage + "\n");
        return sub === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown subcommand "${sub}"`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`steward deliveries: ${e.message}\n\n${usage}\n`);
      return 2;
    }
    throw e;
  }
}
