import { spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { defineHandler } from "../../src/handler.js";
import { tempDir, testEngine } from "./helpers.js";

const fixture = join(import.meta.dirname, "fixtures", "crash-child.ts");

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(async () => cleanup());

/** Runs the child until it prints a line starting with `until`, then kills it with SIGKILL. */
function runChildAndKill(mode: "record" | "run", count: number, until: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", fixture, dir, mode, String(count)], {
      cwd: join(import.meta.dirname, "..", ".."),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.split("\n").some((l) => l.startsWith(until))) child.kill("SIGKILL");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on("exit", (code, signal) => {
      if (signal === "SIGKILL") resolve(out);
      else reject(new Error(`child exited ${code} before being killed: ${err}`));
    });
  });
}

/** Processes everything in the store with a handler that logs each delivery it completes. */
async function processAll(): Promise<string[]> {
  const store = openSqliteStore(dir);
  const effect = defineHandler<unknown>({
    name: "effect",
    events: ["push"],
    async handle(ctx) {
      appendFileSync(join(dir, "effects.log"), `${ctx.deliveryId}\n`);
    },
  });
  const engine = testEngine(store, [effect]);
  await engine.start();
  await engine.idle();
  await engine.stop(1000);
  const statuses = (await store.deliveries.listDeliveries()).map((d) => d.status);
  store.close();
  expect(statuses.every((s) => s === "done")).toBe(true);
  const log = join(dir, "effects.log");
  return existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean) : [];
}

describe("crash recovery", () => {
  it("a delivery recorded just before kill -9 is processed exactly once after restart", async () => {
    const out = await runChildAndKill("record", 20, "recorded");
    expect(out).toContain("recorded 20");
    const effects = await processAll();
    expect(effects.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `crash-${i}`).sort());
    // A second restart has nothing left to do.
    expect(await processAll()).toHaveLength(20);
  });

  it("a delivery whose run was killed mid-handler is taken back at once and completed once", async () => {
    const out = await runChildAndKill("run", 1, "started");
    expect(out).toContain("started crash-0");
    expect(readFileSync(join(dir, "started.log"), "utf8")).toBe("crash-0\n");
    const effects = await processAll();
    expect(effects).toEqual(["crash-0"]);
    const store = openSqliteStore(dir);
    const shown = await store.deliveries.getDelivery("crash-0");
    store.close();
    // The killed run counted as an attempt (a delivery that crashes the process must not loop forever).
    expect(shown?.delivery.attempts).toBe(2);
    expect(shown?.outcomes[0]).toMatchObject({ handler: "effect", status: "done", attempts: 1 });
  });
});
