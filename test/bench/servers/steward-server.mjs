// Steward as benchmarked: the real service (intake, durable store, engine, worker pool) with its
// built-in handlers, against the live API named by GITHUB_API_URL (the sandbox hub of
// hub-server.mjs, in its own process), so each delivery's token and policy reads are real and
// paid in the same run. BENCH_NOOP=1 runs a no-op handler for every event instead (no API), for
// comparison. Run as production runs it: the compiled JavaScript in dist/ (`npm run build`) on
// plain node, no tsx. Plain JavaScript for that reason.
// Prints its port on stdout and answers "usage" messages with RSS and CPU time.
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../../dist/src/config/env.js";
import { createSteward } from "../../../dist/src/app.js";
import { createLogger } from "../../../dist/src/log/logger.js";
import Database from "better-sqlite3";
import { benchSettings, countingNoop } from "./bench-steward.mjs";

const noopMode = process.env.BENCH_NOOP === "1" || !process.env.GITHUB_API_URL;
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
// A bench run records gigabytes of deliveries: a data dir made here goes when the server does.
const ownDataDir = process.env.STEWARD_DATA_DIR ? undefined : mkdtempSync(join(tmpdir(), "steward-bench-"));
const config = loadConfig({
  ...benchSettings({
    privateKeyPem: process.env.PRIVATE_KEY_PATH ? undefined : privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
    dataDir: process.env.STEWARD_DATA_DIR ?? ownDataDir,
    apiUrl: process.env.GITHUB_API_URL,
  }),
  // The bench's hub world names its own app, key and webhook secret.
  ...(process.env.PRIVATE_KEY_PATH ? { PRIVATE_KEY_PATH: process.env.PRIVATE_KEY_PATH } : {}),
  ...(process.env.WEBHOOK_SECRET ? { WEBHOOK_SECRET: process.env.WEBHOOK_SECRET } : {}),
  ...(process.env.APP_ID ? { APP_ID: process.env.APP_ID } : {}),
});
const noop = countingNoop();
const steward = await createSteward({
  config,
  // Without `handlers` createSteward runs the built-in set, as `steward start` does. The hub asks
  // for no spacing between writes (as in the sandbox stack); GitHub's 1 s would pace, not cost.
  // BENCH_NO_HANDLERS=1: no handler at all, so every delivery is settled at the intake (the
  // upper bound of what the intake alone costs; analysis.md).
  ...(process.env.BENCH_NO_HANDLERS === "1" ? { handlers: [] } : noopMode ? { handlers: [noop.handler] } : { api: { writeIntervalMs: 0 } }),
  logger: createLogger({ level: "warn", format: "json" }),
});
process.stdout.write(`PORT=${new URL(steward.url).port}\n`);
// Peak of each part of the process's memory (EXP: sampled every 100 ms), reported with usage.
const memPeak = {};
if (process.env.BENCH_MEMTRACE === "1") setInterval(() => { for (const [k, v] of Object.entries(process.memoryUsage())) memPeak[k] = Math.max(memPeak[k] ?? 0, v); }, 100).unref();
async function usage() {
  const mem = process.memoryUsage();
  return { memPeak, mem, rss: mem.rss, maxRss: process.resourceUsage().maxRSS * 1024, cpu: process.cpuUsage(), minorFaults: process.resourceUsage().minorPageFault, ...(noopMode ? { processed: noop.processed() } : {}), depth: await steward.engine.intake.depth() };
}
// CPU profile of a window the bench chooses (after warm-up, start-up excluded), written as .cpuprofile.
let inspector;
async function profile(m) {
  if (m.profile === "start") {
    inspector = new Session();
    inspector.connect();
    await inspector.post("Profiler.enable");
    await inspector.post("Profiler.start");
  } else if (inspector) {
    const { profile } = await inspector.post("Profiler.stop");
    writeFileSync(m.file, JSON.stringify(profile));
    inspector.disconnect();
    inspector = undefined;
  }
  return usage();
}
// What the worker did: deliveries finished and handler outcomes by status, read from the store
// on its own read-only connection (asked once, after the run).
function outcomes() {
  const db = new Database(steward.store.path, { readonly: true, fileMustExist: true });
  try {
    const deliveries = Object.fromEntries(db.prepare("SELECT status, count(*) AS n FROM deliveries GROUP BY status").all().map((r) => [r.status, r.n]));
    const handlers = Object.fromEntries(db.prepare("SELECT handler || ' ' || status AS k, count(*) AS n FROM outcomes GROUP BY 1").all().map((r) => [r.k, r.n]));
    return { mode: noopMode ? "noop" : "builtin", deliveries, handlers };
  } finally {
    db.close();
  }
}
process.on("message", (m) => {
  if (m === "outcomes") process.send?.(outcomes());
  if (typeof m === "object" && m !== null && "profile" in m) void profile(m).then((u) => process.send?.(u));
  // "drain": answer once everything recorded so far has been processed (the worker caught up).
  if (m === "usage") void usage().then((u) => process.send?.(u));
  if (m === "drain") void steward.engine.idle().then(usage).then((u) => process.send?.(u));
});
process.on("SIGTERM", () => {
  void steward.close().then(() => {
    if (ownDataDir) rmSync(ownDataDir, { recursive: true, force: true });
    process.exit(0);
  });
});
