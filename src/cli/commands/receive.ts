// `steward receive --event E --payload FILE`: push one webhook payload (a fixture, a payload
// copied from GitHub's delivery log) through the configured handlers once, in this process,
// and print each handler's outcome. With APP_ID set the handlers call GITHUB_API_URL as the
// real app; with no APP_ID they run against an in-process sandbox hub. Either way the run uses
// a throw-away data directory and no Redis, so it never touches a running service's queue.
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Steward } from "../../app.js";
import type { IncomingDelivery } from "../../store/records.js";

export const usage = `usage: steward receive --event EVENT --payload FILE
  Runs the payload in FILE (JSON) as one delivery of EVENT (the X-GitHub-Event name, e.g. issues;
  the action comes from the payload) through the configured handlers once (STEWARD_HANDLERS too),
  and prints each handler's outcome. Exits 1 when a handler failed.
  With APP_ID set: as the real app against GITHUB_API_URL. Without: against an in-process sandbox hub.`;

type Args = { event: string; payload: string };

function parseArgs(args: string[]): Args | string {
  let event = "";
  let payload = "";
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--event") event = args[++i] ?? "";
    else if (a.startsWith("--event=")) event = a.slice(8);
    else if (a === "--payload") payload = args[++i] ?? "";
    else if (a.startsWith("--payload=")) payload = a.slice(10);
    else return `steward receive: unexpected argument ${a}\n${usage}`;
  }
  if (!/^[a-z_]+$/.test(event))
    return `steward receive: --event needs an event name such as issues or pull_request\n${usage}`;
  if (!payload) return `steward receive: --payload needs a JSON file\n${usage}`;
  return { event, payload };
}

async function readPayload(file: string): Promise<Record<string, unknown> | string> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    return `steward receive: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      return `steward receive: ${file} is not a JSON object`;
    return parsed as Record<string, unknown>;
  } catch (e) {
    return `steward receive: ${file} is not valid JSON: ${(e as Error).message}`;
  }
}

function deliveryOf(event: string, payload: Record<string, unknown>): IncomingDelivery {
  const id = randomUUID();
  const installation = payload.installation as { id?: unknown } | undefined;
  const repository = payload.repository as { full_name?: unknown } | undefined;
  return {
    id,
    event,
    action: typeof payload.action === "string" ? payload.action : undefined,
    installationId: typeof installation?.id === "number" ? installation.id : undefined,
    repository: typeof repository?.full_name === "string" ? repository.full_name : undefined,
    headers: {
      "x-github-event": event,
      "x-github-delivery": id,
      "user-agent": "steward-receive",
      "content-type": "application/json",
    },
    payload: JSON.stringify(payload),
    receivedAt: new Date(),
  };
}

/** Steward on a throw-away data directory: one attempt, no Redis, any free port on loopback. */
async function startLocal(dataDir: string): Promise<{ steward: Steward; close(): Promise<void> }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "STEWARD_REDIS_URL") env[k] = v;
  Object.assign(env, { PORT: "0", HOST: "127.0.0.1", STEWARD_DATA_DIR: dataDir, STEWARD_MAX_ATTEMPTS: "1" });
  if (env.APP_ID) {
    const [{ loadConfig }, { createSteward }] = await Promise.all([
      import("../../config/env.js"),
      import("../../app.js"),
    ]);
    const steward = await createSteward({ config: loadConfig(env) });
    return { steward, close: () => steward.close() };
  }
  const { startSandboxStack } = await import("../../sandbox/stack.js");
  const kept = Object.fromEntries(Object.entries(env).filter(([k]) => /^STEWARD_/.test(k) || k === "LOG_LEVEL"));
  const stack = await startSandboxStack({ dataDir, env: { LOG_LEVEL: "warn", ...kept } });
  return { steward: stack.steward as unknown as Steward, close: () => stack.close() };
}

export async function run(args: string[]): Promise<number> {
  const parsed = parseArgs(args);
  if (typeof parsed === "string") {
    process.stderr.write(`${parsed}\n`);
    return 2;
  }
  const payload = await readPayload(parsed.payload);
  if (typeof payload === "string") {
    process.stderr.write(`${payload}\n`);
    return 1;
  }
  const dataDir = await mkdtemp(join(tmpdir(), "steward-receive-"));
  try {
    const local = await startLocal(dataDir);
    try {
      const delivery = deliveryOf(parsed.event, payload);
      await local.steward.engine.intake.record(delivery);
      await local.steward.engine.idle();
      const outcomes = (await local.steward.store.deliveries.getDelivery(delivery.id))?.outcomes ?? [];
      const label = delivery.action ? `${delivery.event}.${delivery.action}` : delivery.event;
      if (outcomes.length === 0) process.stdout.write(`${label}: no handler listens to this event\n`);
      for (const o of outcomes) process.stdout.write(`${o.handler}: ${o.status}${o.detail ? ` (${o.detail})` : ""}\n`);
      return outcomes.some((o) => o.status === "failed") ? 1 : 0;
    } finally {
      await local.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
