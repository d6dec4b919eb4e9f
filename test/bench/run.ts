// `npm run bench`: Steward against Probot on this machine, end-to-end latency, API cost and
// memory. Prints the report; a full run also writes test/bench/RESULTS.md (with the hand-written
// analysis in test/bench/analysis.md appended). Never part of `npm test`.
import { cpus, loadavg } from "node:os";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseOptions, USAGE } from "./options.js";
import { benchIntake } from "./intake.js";
import { benchEndToEnd } from "./e2e.js";
import { benchBurst } from "./burst.js";
import { benchApiCost } from "./api-cost.js";
import { benchMemory } from "./memory.js";
import { profileStewardIntake } from "./profile.js";
import { benchTokenMints } from "./tokens.js";
import { renderReport, settingsText, type BenchResults } from "./report.js";
import { benchConsole } from "./console.js";
import { ensureCompiled } from "./build.js";
import { settingsFromEnv } from "./servers/bench-steward.mjs";

const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));
const log = (s: string) => process.stderr.write(`${s}\n`);

async function main(): Promise<void> {
  if (process.argv.includes("--help")) {
    log(USAGE);
    return;
  }
  const o = parseOptions(process.argv.slice(2));
  if (o.render) {
    const saved = JSON.parse(readFileSync(here("./results.json"), "utf8")) as BenchResults;
    writeFileSync(here("./RESULTS.md"), renderReport(saved, readFileSync(here("./analysis.md"), "utf8")));
    log("rendered test/bench/RESULTS.md from test/bench/results.json");
    return;
  }
  if (o.sections.has("intake") || o.sections.has("burst") || o.sections.has("profile") || o.sections.has("e2e")) ensureCompiled(log);
  const started = Date.now();
  const results: BenchResults = {
    machine: {
      date: new Date().toISOString(),
      node: process.version,
      cpu: cpus()[0]?.model.trim() ?? "unknown CPU",
      cores: cpus().length,
      loadBefore: loadavg(),
      loadAfter: [],
      mode: o.quick ? "quick" : "full",
      seconds: 0,
    },
  };
  // Durability is the bench's own option (--durability), whatever the environment says.
  const { STEWARD_DURABILITY: _option, ...settings } = settingsFromEnv(process.env);
  if (Object.keys(settings).length > 0) {
    results.machine.settings = settings;
    log(`Steward runs with ${settingsText(settings)} from the environment`);
  }
  if (o.sections.has("intake")) {
    log(`intake (${o.rounds > 1 ? `${o.rounds} rounds of ${o.seconds} s` : `${o.seconds} s`} per level, durability ${o.durability})`);
    results.intake = await benchIntake({ concurrencies: o.concurrencies, seconds: o.seconds, rounds: o.rounds, warmupSeconds: o.warmupSeconds, durability: o.durability, noop: o.noop }, log);
  }
  if (o.sections.has("burst")) {
    log(`burst (${o.burst.deliveries} deliveries over ${o.burst.connections} connections, 10 s client timeout)`);
    results.burst = await benchBurst({ ...o.burst, durability: o.durability, noop: o.noop }, log);
  }
  if (o.sections.has("profile")) {
    log("profile (Steward intake at concurrency 50)");
    results.profile = await profileStewardIntake({ connections: Number(process.env.BENCH_PROFILE_CONNECTIONS ?? 50), seconds: o.profileSeconds, durability: o.durability, noop: o.noop });
  }
  if (o.sections.has("e2e")) {
    log(`end-to-end (${o.e2e.count} per flow at ${o.e2e.rate}/s)`);
    results.e2e = await benchEndToEnd({ ...o.e2e, durability: o.durability }, log);
  }
  if (o.sections.has("cost")) {
    log(`API cost (N = ${o.costSizes.join(", ")})`);
    results.cost = await benchApiCost({ sizes: o.costSizes, concurrency: o.costConcurrency }, log);
  }
  if (o.sections.has("memory")) {
    log(`memory (${o.deliveries} deliveries)`);
    results.memory = await benchMemory({ deliveries: o.deliveries, durability: o.durability }, log);
  }
  if (o.sections.has("tokens")) {
    log(`token mints (tokens living ${o.tokens.ttlMs / 1000} s, ${o.tokens.windows} renewal windows; needs Redis)`);
    results.tokens = await benchTokenMints(o.tokens, log);
  }
  if (o.sections.has("console")) {
    log(`console pages (${o.consoleDeliveries} deliveries stored, SQLite and Redis)`);
    results.console = await benchConsole({ deliveries: o.consoleDeliveries, times: o.quick ? 5 : 100 }, log);
  }
  results.machine.loadAfter = loadavg();
  results.machine.seconds = (Date.now() - started) / 1000;
  // A partial run (--only) that writes keeps the other sections of the last run, so one section
  // can be measured again without re-running the rest; the header says which run is which.
  if (o.write && existsSync(here("./results.json"))) {
    const saved = JSON.parse(readFileSync(here("./results.json"), "utf8")) as BenchResults;
    const kept: string[] = [];
    const keptFrom: Record<string, string> = {};
    for (const key of Object.keys(saved) as (keyof BenchResults)[]) {
      if (key === "machine" || results[key] !== undefined) continue;
      (results as unknown as Record<string, unknown>)[key] = saved[key];
      kept.push(key);
      // A section the saved run kept itself carries that run's date for it, not the saved run's.
      keptFrom[key] = saved.machine.kept?.sections.includes(key) ? (saved.machine.keptFrom?.[key] ?? saved.machine.kept.from) : saved.machine.date;
    }
    if (kept.length) {
      results.machine.kept = { sections: kept, from: saved.machine.kept?.from ?? saved.machine.date };
      results.machine.keptFrom = keptFrom;
    }
  }
  const analysis = existsSync(here("./analysis.md")) ? readFileSync(here("./analysis.md"), "utf8") : "";
  const report = renderReport(results, o.write ? analysis : "");
  process.stdout.write(report);
  if (o.write) {
    writeFileSync(here("./RESULTS.md"), report);
    writeFileSync(here("./results.json"), JSON.stringify(results, null, 2) + "\n");
    log("wrote test/bench/RESULTS.md and test/bench/results.json");
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
