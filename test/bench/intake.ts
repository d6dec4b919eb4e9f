// Section 1: intake throughput and latency, Steward against a minimal Probot app, same payloads,
// same load generator, same machine. Each server runs in its own process; both run side by side
// and take turns level by level. After each of Steward's levels its worker is allowed to catch
// up, so a backlog does not leak into the next level.
import { fileURLToPath } from "node:url";
import type { SignedPayload } from "./payloads.js";
import { runLoad, type LoadResult } from "./load.js";
import { startChild, type ServerChild, type Usage } from "./child.js";
import { describeWork, payloadsFor, startBenchApi, startSteward } from "./steward-child.js";
import { deliveryIdForm, type DeliveryIdForm } from "./delivery-ids.js";
import { median } from "./stats.js";

export interface IntakeRow extends LoadResult {
  server: "steward" | "probot";
  /**
   * The server's CPU (user + system, all its threads) per delivery answered 2xx at this level,
   * Steward's catch-up included: ms. Less sensitive to other load on the machine than the rate.
   */
  cpuMsPerDelivery?: number;
  /**
   * With several rounds a level (the row's rates and latencies are then their medians, its counts
   * their sums, its max the largest): each round's rate.
   */
  roundRps?: number[];
  /** Steward's rows: each round's rate over Probot's in the same round (the ratio is their median). */
  ratios?: number[];
}

export interface ServerUsage {
  server: "steward" | "probot";
  /** Peak RSS over the whole intake run, bytes. */
  peakRss: number;
  /** CPU seconds (user + system) spent during the highest-concurrency level. */
  cpuAtTop: number;
  /** Seconds of that level (load plus Steward's catch-up), to read CPU as a share of a core. */
  topSeconds: number;
  /** Deliveries Steward's worker processed over the run (Steward only). */
  processed?: number;
  accepted: number;
  /** Seconds Steward's worker needed after the top level's load stopped to finish the backlog. */
  drainSeconds?: number;
}

export interface IntakeResult {
  durability: string;
  /** What Steward's worker ran: the built-in handlers against the sandbox hub, or a no-op handler (`--noop`). */
  handlers?: "builtin" | "noop";
  /** What the worker did over the run: deliveries by status, handler outcomes, the hub's API requests. */
  work?: string;
  payloads: { count: number; minBytes: number; maxBytes: number; events: string[] };
  /** The X-GitHub-Delivery values sent: GitHub's time-based form, or random (BENCH_DELIVERY_IDS=random); absent in runs before stop 40 (random). */
  deliveryIds?: DeliveryIdForm;
  seconds: number;
  /** Rounds a level (absent: one, in runs before stop 44). */
  rounds?: number;
  rows: IntakeRow[];
  usage: ServerUsage[];
}

const WEBHOOK_PATH = "/api/github/webhooks";
const SECRET = "bench-secret";
const file = (name: string) => fileURLToPath(new URL(`./servers/${name}`, import.meta.url));
const cpuSeconds = (u: Usage) => (u.cpu.user + u.cpu.system) / 1e6;

type Server = "steward" | "probot";

/** What one server has done so far in the run. */
interface Tally {
  accepted: number;
  cpuAtTop: number;
  topSeconds: number;
  drainSeconds?: number;
}

async function warmUp(server: Server, child: ServerChild, payloads: SignedPayload[], o: { warmupSeconds: number }): Promise<void> {
  await runLoad({ url: child.url, payloads, connections: 10, seconds: o.warmupSeconds });
  if (server === "steward") await child.ask("drain");
}

async function measureLevel(server: Server, child: ServerChild, payloads: SignedPayload[], connections: number, top: boolean, tally: Tally, o: { seconds: number }, log: (s: string) => void): Promise<IntakeRow> {
  const before = await child.ask("usage");
  const started = Date.now();
  const r = await runLoad({ url: child.url, payloads, connections, seconds: o.seconds });
  const loadEnded = Date.now();
  // Steward answers 202 before processing: count the work it still owes as part of this level.
  const after = server === "steward" ? await child.ask("drain") : await child.ask("usage");
  const answered = r.requests - r.non2xx - r.errors;
  const cpuSpent = cpuSeconds(after) - cpuSeconds(before);
  tally.accepted += answered;
  if (top) {
    tally.cpuAtTop = cpuSpent;
    tally.topSeconds = (Date.now() - started) / 1000;
    if (server === "steward") tally.drainSeconds = (Date.now() - loadEnded) / 1000;
  }
  const cpuMsPerDelivery = answered > 0 ? (cpuSpent * 1000) / answered : undefined;
  const faults = answered > 0 && after.minorFaults !== undefined && before.minorFaults !== undefined ? (after.minorFaults - before.minorFaults) / answered : undefined;
  const kernelSeconds = (after.cpu.system - before.cpu.system) / 1e6;
  log(
    `  ${server} c=${connections}: ${r.rps.toFixed(0)}/s p50 ${r.p50} ms p99 ${r.p99} ms max ${r.max} ms non2xx ${r.non2xx} errors ${r.errors}` +
      (cpuMsPerDelivery !== undefined ? `, ${cpuMsPerDelivery.toFixed(2)} CPU ms/delivery` : "") +
      (faults !== undefined ? `, ${faults.toFixed(2)} page faults/delivery` : "") +
      (cpuSpent > 0 ? `, ${((100 * kernelSeconds) / cpuSpent).toFixed(0)}% of CPU in the kernel` : ""),
  );
  return { server, ...r, ...(cpuMsPerDelivery !== undefined ? { cpuMsPerDelivery } : {}) };
}

/** One server's rounds at one level as one row. */
function combine(rounds: IntakeRow[]): IntakeRow {
  if (rounds.length === 1) return rounds[0]!;
  const mid = (pick: (r: IntakeRow) => number) => median(rounds.map(pick));
  const sum = (pick: (r: IntakeRow) => number) => rounds.reduce((n, r) => n + pick(r), 0);
  const cpu = rounds.map((r) => r.cpuMsPerDelivery).filter((x): x is number => x !== undefined);
  return {
    server: rounds[0]!.server,
    connections: rounds[0]!.connections,
    requests: sum((r) => r.requests),
    rps: mid((r) => r.rps),
    p50: mid((r) => r.p50),
    p99: mid((r) => r.p99),
    max: Math.max(...rounds.map((r) => r.max)),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    ...(cpu.length ? { cpuMsPerDelivery: median(cpu) } : {}),
    roundRps: rounds.map((r) => r.rps),
  };
}

export async function benchIntake(
  o: { concurrencies: number[]; seconds: number; rounds?: number; warmupSeconds: number; durability: "process" | "power"; noop: boolean },
  log: (s: string) => void,
): Promise<IntakeResult> {
  const api = await startBenchApi(o.noop);
  // Both servers get the same payloads, mapped onto the hub's installation and repository.
  const payloads = payloadsFor(SECRET, api);
  const rows: IntakeRow[] = [];
  const usage: ServerUsage[] = [];
  let work: string | undefined;
  // Both servers run side by side and take turns level by level (Probot, then Steward, at each
  // concurrency), so the two rates of a ratio are measured a minute apart, not several: a shared
  // machine's speed drifts over minutes, and that drift went into the ratios when each server ran
  // all its levels in turn.
  const servers = ["probot", "steward"] as const;
  const children = new Map<Server, ServerChild>();
  const tallies = new Map<Server, Tally>(servers.map((server) => [server, { accepted: 0, cpuAtTop: 0, topSeconds: 0 }]));
  try {
    for (const server of servers) {
      children.set(
        server,
        server === "steward"
          ? await startSteward({ WEBHOOK_SECRET: SECRET, STEWARD_DURABILITY: o.durability }, api)
          : await startChild(file(`${server}-server.ts`), { WEBHOOK_SECRET: SECRET }, WEBHOOK_PATH),
      );
    }
    for (const server of servers) await warmUp(server, children.get(server)!, payloads, o);
    const topLevel = Math.max(...o.concurrencies);
    const rounds = Math.max(1, o.rounds ?? 1);
    for (const connections of o.concurrencies) {
      const measured = new Map<Server, IntakeRow[]>(servers.map((server) => [server, []]));
      for (let round = 1; round <= rounds; round++) {
        if (rounds > 1) log(`  c=${connections}, round ${round} of ${rounds}`);
        for (const server of servers) measured.get(server)!.push(await measureLevel(server, children.get(server)!, payloads, connections, connections === topLevel, tallies.get(server)!, o, log));
      }
      const probot = measured.get("probot")!;
      const steward = combine(measured.get("steward")!);
      if (rounds > 1) steward.ratios = measured.get("steward")!.map((s, i) => s.rps / probot[i]!.rps);
      rows.push(combine(probot), steward);
    }
    for (const server of servers) {
      const child = children.get(server)!;
      const end = await child.ask("usage");
      const t = tallies.get(server)!;
      const u: ServerUsage = { server, peakRss: end.maxRss, cpuAtTop: t.cpuAtTop, topSeconds: t.topSeconds, accepted: t.accepted, ...(end.processed !== undefined ? { processed: end.processed } : {}), ...(t.drainSeconds !== undefined ? { drainSeconds: t.drainSeconds } : {}) };
      if (server === "steward") {
        const w = await describeWork(child, api);
        work = w.text;
        u.processed ??= w.finished;
        log(`  steward's worker, ${w.text}`);
      }
      usage.push(u);
    }
  } finally {
    for (const child of children.values()) await child.stop();
    await api?.stop();
  }
  const sizes = payloads.map((p) => p.bytes);
  return {
    durability: o.durability,
    handlers: o.noop ? "noop" : "builtin",
    ...(work ? { work } : {}),
    deliveryIds: deliveryIdForm,
    payloads: { count: payloads.length, minBytes: Math.min(...sizes), maxBytes: Math.max(...sizes), events: [...new Set(payloads.map((p) => p.event))] },
    seconds: o.seconds,
    rounds: Math.max(1, o.rounds ?? 1),
    rows,
    usage,
  };
}
