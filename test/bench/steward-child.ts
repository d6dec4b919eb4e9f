// The benchmarked Steward and the live API behind it, each in its own process: the sandbox hub
// (servers/hub-server.mjs) first, then Steward (servers/steward-server.mjs) with its built-in
// handlers pointed at it. With `noop`, Steward alone with a no-op handler (no API), as the bench
// ran before the handlers were measured. The payloads are mapped onto the hub's world.
import { fileURLToPath } from "node:url";
import { startChild, type ServerChild } from "./child.js";
import { benchPayloads, type BenchWorld, type SignedPayload } from "./payloads.js";

const file = (name: string) => fileURLToPath(new URL(`./servers/${name}`, import.meta.url));

export interface BenchApi {
  hub: ServerChild;
  world: BenchWorld & { env: Record<string, string> };
  stop(): Promise<void>;
}

/** The hub, seeded, or undefined in no-op mode. */
export async function startBenchApi(noop: boolean): Promise<BenchApi | undefined> {
  if (noop) return undefined;
  const hub = await startChild(file("hub-server.mjs"), {}, "/");
  const line = /WORLD=(.*)/.exec(hub.banner)?.[1];
  if (!line) {
    await hub.stop();
    throw new Error("hub-server.mjs printed no WORLD= line");
  }
  return { hub, world: JSON.parse(line) as BenchApi["world"], stop: () => hub.stop() };
}

export function payloadsFor(secret: string, api: BenchApi | undefined): SignedPayload[] {
  return benchPayloads(secret, api?.world);
}

/** Steward's server, against `api` when given (built-in handlers), else with the no-op handler. */
export function startSteward(env: Record<string, string>, api: BenchApi | undefined): Promise<ServerChild> {
  return startChild(file("steward-server.mjs"), { ...env, ...(api ? api.world.env : { BENCH_NOOP: "1" }) }, "/api/github/webhooks");
}

/** What the worker did (deliveries by status, handler outcomes by status), one line for the log. */
export async function describeWork(steward: ServerChild, api: BenchApi | undefined): Promise<{ text: string; finished: number; mode: string }> {
  const o = await steward.ask<{ mode: string; deliveries: Record<string, number>; handlers: Record<string, number> }>("outcomes");
  const calls = api ? await api.hub.ask<Record<string, number>>("requests") : {};
  const finished = Object.entries(o.deliveries).filter(([s]) => s !== "queued" && s !== "running").reduce((n, [, c]) => n + c, 0);
  const fmt = (m: Record<string, number>) => Object.entries(m).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(", ") || "none";
  return { text: `${o.mode}: deliveries ${fmt(o.deliveries)}; handler outcomes ${fmt(o.handlers)}; API requests ${fmt(calls)}`, finished, mode: o.mode };
}
