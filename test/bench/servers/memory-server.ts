// The long-run memory check: the real Steward (store, engine, worker pool, no-op handler) fed
// through its intake in-process (`steward.engine.intake.record`, the call the HTTP intake makes
// after verifying a signature), so a million deliveries take minutes, not hours. Reports RSS at
// checkpoints over IPC. Finished deliveries are purged as it goes (a short retention) so the disk
// stays bounded; that purge is the engine's own housekeeping call.
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../../src/config/env.js";
import { createSteward } from "../../../src/app.js";
import { createLogger } from "../../../src/log/logger.js";
import { benchPayloads } from "../payloads.js";
import { benchSettings, countingNoop } from "./bench-steward.mjs";

const total = Number(process.env.BENCH_DELIVERIES ?? 100_000);
const checkpoints = 10;
/** Deliveries recorded per round; the next round waits until the worker is within one round. */
const batch = 500;

const dataDir = mkdtempSync(join(tmpdir(), "steward-bench-mem-"));
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const config = loadConfig(benchSettings({ privateKeyPem: privateKey.export({ type: "pkcs1", format: "pem" }).toString(), dataDir }));
const noop = countingNoop();
const steward = await createSteward({ config, handlers: [noop.handler], logger: createLogger({ level: "warn", format: "json" }) });
const payloads = benchPayloads("bench-secret").map((p) => {
  const parsed = JSON.parse(p.body) as { action?: string; installation?: { id: number }; repository?: { full_name: string } };
  return { event: p.event, body: p.body, action: parsed.action, installationId: parsed.installation?.id, repository: parsed.repository?.full_name };
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const started = Date.now();
const samples: { recorded: number; processed: number; rss: number; heapUsed: number; seconds: number }[] = [];
let recorded = 0;
for (let next = 0; next < total; ) {
  const round: Promise<unknown>[] = [];
  for (let i = 0; i < batch && next < total; i++, next++) {
    const p = payloads[next % payloads.length]!;
    const id = randomUUID();
    round.push(
      steward.engine.intake.record({
        id,
        event: p.event,
        action: p.action,
        installationId: p.installationId,
        repository: p.repository,
        headers: { "x-github-event": p.event, "x-github-delivery": id, "content-type": "application/json", "user-agent": "GitHub-Hookshot/bench" },
        payload: p.body,
        receivedAt: new Date(),
      }),
    );
  }
  await Promise.all(round);
  recorded = next;
  while ((await steward.engine.intake.depth()) > batch) await sleep(5);
  if (recorded % Math.max(batch, Math.floor(total / checkpoints / batch) * batch) === 0 || recorded === total) {
    if (recorded === total) await steward.engine.idle();
    await steward.store.deliveries.purgeFinished(new Date());
    // A full collection first (the child runs with --expose-gc): what stays is what is retained.
    (globalThis as { gc?: () => void }).gc?.();
    const m = process.memoryUsage();
    samples.push({ recorded, processed: noop.processed(), rss: m.rss, heapUsed: m.heapUsed, seconds: (Date.now() - started) / 1000 });
    process.send?.({ progress: samples.at(-1) });
  }
}
await steward.engine.idle();
const result = { total, processed: noop.processed(), samples, maxRss: process.resourceUsage().maxRSS * 1024, cpu: process.cpuUsage(), seconds: (Date.now() - started) / 1000 };
await steward.close();
rmSync(dataDir, { recursive: true, force: true });
process.send?.({ done: result }, () => process.exit(0));
