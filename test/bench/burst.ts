// Burst: a fixed number of deliveries offered as fast as the load generator can send them, over
// many connections, against each server in turn. GitHub gives up on a delivery not answered
// within 10 s, so that is the client's timeout. Steward answers once a delivery is recorded and
// works the backlog off afterwards (the drain time is reported); Probot runs its handler, here one
// 50 ms API call to a local stub, before it answers, so its answers wait for that work.
import { fileURLToPath } from "node:url";
import { runLoad, type LoadResult } from "./load.js";
import { startChild } from "./child.js";
import { describeWork, payloadsFor, startBenchApi, startSteward } from "./steward-child.js";

export interface BurstRow extends LoadResult {
  server: "steward" | "probot";
  offered: number;
  /** Wall-clock seconds from the first request to the last answer (or timeout). */
  seconds: number;
  /** Steward only: seconds from the last answer until its worker had processed every recorded delivery. */
  drainSeconds?: number;
  /** Steward only: deliveries waiting or running when the last answer went out. */
  backlogAtEnd?: number;
  peakRss: number;
}

export interface BurstResult {
  deliveries: number;
  connections: number;
  timeoutSeconds: number;
  apiDelayMs: number;
  /** What Steward's worker ran: the built-in handlers against the sandbox hub, or a no-op handler (`--noop`). */
  handlers?: "builtin" | "noop";
  /** What Steward's worker did over the burst (deliveries by status, handler outcomes, API requests). */
  work?: string;
  rows: BurstRow[];
}

const WEBHOOK_PATH = "/api/github/webhooks";
const SECRET = "bench-secret";
const file = (name: string) => fileURLToPath(new URL(`./servers/${name}`, import.meta.url));

export async function benchBurst(o: { deliveries: number; connections: number; durability: "process" | "power"; noop: boolean }, log: (s: string) => void): Promise<BurstResult> {
  const timeoutSeconds = 10;
  const apiDelayMs = 50;
  const rows: BurstRow[] = [];
  let work: string | undefined;
  const api = await startBenchApi(o.noop);
  const payloads = payloadsFor(SECRET, api);
  const stub = await startChild(file("api-stub.ts"), { STUB_DELAY_MS: String(apiDelayMs) }, "/");
  try {
    for (const server of ["probot", "steward"] as const) {
      const child =
        server === "steward"
          ? await startSteward({ WEBHOOK_SECRET: SECRET, STEWARD_DURABILITY: o.durability }, api)
          : await startChild(file(`${server}-server.ts`), { WEBHOOK_SECRET: SECRET, API_STUB_URL: stub.url }, WEBHOOK_PATH);
      try {
        // A short warm-up so the burst does not also pay for start-up and JIT.
        await runLoad({ url: child.url, payloads, connections: 10, seconds: 1 });
        if (server === "steward") await child.ask("drain");
        const started = Date.now();
        const r = await runLoad({ url: child.url, payloads, connections: o.connections, seconds: 0, amount: o.deliveries, timeoutSeconds });
        const answered = Date.now();
        const atEnd = await child.ask("usage");
        let drainSeconds: number | undefined;
        if (server === "steward") {
          await child.ask("drain");
          drainSeconds = (Date.now() - answered) / 1000;
        }
        const end = await child.ask("usage");
        const row: BurstRow = {
          server,
          offered: o.deliveries,
          seconds: (answered - started) / 1000,
          peakRss: end.maxRss,
          ...r,
          ...(drainSeconds !== undefined ? { drainSeconds, backlogAtEnd: atEnd.depth ?? 0 } : {}),
        };
        rows.push(row);
        log(
          `  ${server}: ${r.requests} answered in ${row.seconds.toFixed(1)} s, p99 ${r.p99} ms max ${r.max} ms, timeouts ${r.timeouts}, non2xx ${r.non2xx}` +
            (drainSeconds !== undefined ? `, backlog ${row.backlogAtEnd} drained in ${drainSeconds.toFixed(1)} s` : ""),
        );
        if (server === "steward") {
          work = (await describeWork(child, api)).text;
          log(`  steward's worker, ${work}`);
        }
      } finally {
        await child.stop();
      }
    }
  } finally {
    await stub.stop();
    await api?.stop();
  }
  return { deliveries: o.deliveries, connections: o.connections, timeoutSeconds, apiDelayMs, handlers: o.noop ? "noop" : "builtin", ...(work ? { work } : {}), rows };
}
