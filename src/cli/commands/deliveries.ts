// `steward deliveries`: inspect and replay stored deliveries (dead letters included).
//   steward deliveries list [--status queued|running|done|failed|dead] [--event E] [--limit N]
//   steward deliveries show ID [--payload]
//   steward deliveries replay ID
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { openSqliteStore, storeFileName, type SqliteStore } from "../../store/sqlite.js";
import type { DeliveryStatus, HandlerOutcomeRecord, StoredDelivery } from "../../queue/engine-types.js";

const statuses: readonly DeliveryStatus[] = ["queued", "running", "done", "failed", "dead"];
const usage = `usage:
  steward deliveries list [--status ${statuses.join("|")}] [--event EVENT] [--limit N]
  steward deliveries show ID [--payload]
  steward deliveries replay ID
reads STEWARD_DATA_DIR (default ./.steward)`;

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

function formatOutcome(o: HandlerOutcomeRecord): string {
  const label = o.status === "failed" ? "error" : o.status === "skipped" ? "reason" : "summary";
  const detail = o.detail ? `  ${label}: ${oneLine(o.detail, 400)}` : "";
  const retry = o.status === "failed" && !o.retryable ? " (not retryable)" : "";
  return `  ${o.handler.padEnd(14)} ${o.status}${retry}  attempts=${o.attempts}  ${o.seconds.toFixed(3)}s${detail}`;
}

export function formatShow(d: StoredDelivery, outcomes: HandlerOutcomeRecord[], withPayload: boolean): string {
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

function dataDir(): string {
  return resolve(process.env.STEWARD_DATA_DIR || ".steward");
}

async function withStore<T>(fn: (store: SqliteStore) => Promise<T>): Promise<T | undefined> {
  const dir = dataDir();
  if (!existsSync(join(dir, storeFileName))) return undefined;
  const store = openSqliteStore(dir);
  try {
    return await fn(store);
  } finally {
    store.close();
  }
}

async function list(args: string[]): Promise<number> {
  const { positional, flags } = parse(args, ["status", "event", "limit"], []);
  if (positional.length > 0) throw new UsageError(`unexpected argument "${positional[0]}"`);
  const status = flags.get("status") as string | undefined;
  if (status !== undefined && !statuses.includes(status as DeliveryStatus)) {
    throw new UsageError(`--status must be one of ${statuses.join(", ")}`);
  }
  const limitText = flags.get("limit") as string | undefined;
  const limit = limitText === undefined ? 100 : Number(limitText);
  if (!Number.isInteger(limit) || limit <= 0) throw new UsageError("--limit must be a positive whole number");
  const event = flags.get("event") as string | undefined;
  const rows = await withStore((s) =>
    s.listDeliveries({ ...(status ? { status: status as DeliveryStatus } : {}), ...(event ? { event } : {}), limit }),
  );
  if (!rows || rows.length === 0) {
    process.stdout.write(`no deliveries${status || event ? " match" : ""} in ${dataDir()}\n`);
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
  const { positional, flags } = parse(args, [], ["payload"]);
  const id = oneId(positional);
  const found = await withStore((s) => s.getDelivery(id));
  if (!found) {
    process.stderr.write(`steward deliveries: no stored delivery ${id} in ${dataDir()}\n`);
    return 1;
  }
  process.stdout.write(formatShow(found.delivery, found.outcomes, flags.has("payload")) + "\n");
  return 0;
}

async function replay(args: string[]): Promise<number> {
  const { positional } = parse(args, [], []);
  const id = oneId(positional);
  const result = await withStore(async (s) => {
    const found = await s.getDelivery(id);
    if (!found) return "missing" as const;
    return (await s.replayDelivery(id)) ? ("queued" as const) : ("running" as const);
  });
  if (result === undefined || result === "missing") {
    process.stderr.write(`steward deliveries: no stored delivery ${id} in ${dataDir()}\n`);
    return 1;
  }
  if (result === "running") {
    process.stderr.write(`steward deliveries: delivery ${id} is running now; replay it when it has finished\n`);
    return 1;
  }
  process.stdout.write(`delivery ${id} queued again for every handler (a running service picks it up; otherwise the next start does)\n`);
  return 0;
}

export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
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
