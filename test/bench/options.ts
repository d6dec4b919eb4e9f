// Command-line options of `npm run bench`. Pure: argv in, settings out.

export interface BenchOptions {
  quick: boolean;
  sections: Set<"intake" | "burst" | "e2e" | "cost" | "memory" | "profile" | "tokens" | "console">;
  /** Burst section: deliveries offered at once, over this many connections. */
  burst: { deliveries: number; connections: number };
  concurrencies: number[];
  seconds: number;
  /** Intake: rounds at each level, each server once a round (Probot, then Steward). */
  rounds: number;
  warmupSeconds: number;
  durability: "process" | "power";
  /** Steward runs a no-op handler and no API (intake, burst, profile) instead of its built-in handlers against the sandbox hub. */
  noop: boolean;
  e2e: { rate: number; count: number };
  costSizes: number[];
  costConcurrency: number;
  deliveries: number;
  /** Deliveries stored for the console pages section. */
  consoleDeliveries: number;
  profileSeconds: number;
  /** Token mints: compressed token lifetime and renewal windows measured. */
  tokens: { ttlMs: number; windows: number };
  /** Write test/bench/RESULTS.md (default: full runs only). */
  write: boolean;
  /** Measure nothing: render RESULTS.md again from results.json (after editing analysis.md). */
  render: boolean;
}

const ALL = ["intake", "burst", "e2e", "cost", "memory", "profile", "tokens", "console"] as const;

export const USAGE = `usage: npm run bench -- [--quick] [--only=intake,burst,e2e,cost,memory,profile,tokens,console] [--seconds=N]
  [--rounds=N] [--durability=process|power] [--noop] [--deliveries=N] [--sizes=100,1000] [--write | --no-write]
  npm run bench -- --render    (RESULTS.md again from results.json, e.g. after editing analysis.md)`;

export function parseOptions(argv: readonly string[]): BenchOptions {
  const flags = new Map<string, string>();
  for (const arg of argv) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new Error(`unknown argument ${JSON.stringify(arg)}\n${USAGE}`);
    flags.set(m[1]!, m[2] ?? "true");
  }
  const known = new Set(["quick", "only", "seconds", "durability", "deliveries", "sizes", "write", "no-write", "render", "help", "noop", "rounds"]);
  for (const k of flags.keys()) if (!known.has(k)) throw new Error(`unknown option --${k}\n${USAGE}`);
  const quick = flags.has("quick");
  const number = (name: string, fallback: number) => {
    const raw = flags.get(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number (got ${JSON.stringify(raw)})`);
    return n;
  };
  const durability = flags.get("durability") ?? "process";
  if (durability !== "process" && durability !== "power") throw new Error(`--durability must be process or power`);
  // Quick mode skips the profile (an extra Steward run) to stay under a minute.
  const only = flags.get("only")?.split(",") ?? ALL.filter((s) => !quick || s !== "profile");
  for (const s of only) if (!(ALL as readonly string[]).includes(s)) throw new Error(`--only takes ${ALL.join(",")} (got ${JSON.stringify(s)})`);
  const sizes = flags.get("sizes")?.split(",").map(Number) ?? (quick ? [20] : [100, 1000]);
  if (sizes.some((n) => !Number.isSafeInteger(n) || n < 1)) throw new Error("--sizes takes whole numbers, e.g. 100,1000");
  return {
    quick,
    sections: new Set(only as BenchOptions["sections"] extends Set<infer T> ? T[] : never),
    concurrencies: [1, 10, 50, 200],
    // Three short rounds a level rather than one long one: runs of one build on a shared machine
    // differ by a fifth, and a median of three paired rounds moves less than one sample.
    seconds: number("seconds", quick ? 1 : 6),
    rounds: Math.round(number("rounds", quick ? 1 : 3)),
    warmupSeconds: quick ? 1 : 3,
    durability,
    noop: flags.has("noop"),
    e2e: quick ? { rate: 10, count: 10 } : { rate: 10, count: 200 },
    burst: { deliveries: quick ? 2_000 : 20_000, connections: 200 },
    costSizes: sizes,
    costConcurrency: 16,
    consoleDeliveries: quick ? 10_000 : 100_000,
    deliveries: number("deliveries", quick ? 3_000 : 1_000_000),
    profileSeconds: quick ? 2 : 8,
    // Windows of 5 s: long enough that the hub's whole-second expiry cannot add a window.
    tokens: quick ? { ttlMs: 10_000, windows: 2 } : { ttlMs: 10_000, windows: 4 },
    write: flags.has("write") || (!quick && !flags.has("no-write")),
    render: flags.has("render"),
  };
}
