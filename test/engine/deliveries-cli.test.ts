import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { runCli } from "../cli/capture.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { tempDir, testEngine } from "./helpers.js";
import { seedDoneAndDead } from "./seed-deliveries.js";

let dir: string;
let cleanup: () => Promise<void>;
const savedDataDir = process.env.STEWARD_DATA_DIR;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  process.env.STEWARD_DATA_DIR = dir;
});
afterEach(async () => {
  if (savedDataDir === undefined) delete process.env.STEWARD_DATA_DIR;
  else process.env.STEWARD_DATA_DIR = savedDataDir;
  vi.restoreAllMocks();
  await cleanup();
});

function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return runCli(["deliveries", ...args]);
}

/** Stores one done push and one dead workflow_run in the data directory, processed by real handlers. */
async function populate(handlerCalls: string[]) {
  const store = openSqliteStore(dir);
  const { push, run, handlers } = await seedDoneAndDead(store, "d", { calls: handlerCalls });
  store.close();
  return { push, run, engine: () => ({ store: openSqliteStore(dir), handlers }) };
}

describe("steward deliveries", () => {
  it("lists deliveries one a line, filtered by status and event", async () => {
    const calls: string[] = [];
    await populate(calls);
    const all = await cli("list");
    expect(all.code).toBe(0);
    const lines = all.out.trim().split("\n");
    expect(lines).toHaveLength(2);
    const dead = lines.find((l) => l.startsWith("d-run"))!;
    expect(dead).toMatch(/d-run\s+dead\s+workflow_run\.completed\s+\S+\s+attempts=2/);
    expect(dead).toContain('error="rerun: 503 Service Unavailable (attempt 2)"');

    const onlyDead = await cli("list", "--status", "dead");
    expect(
      onlyDead.out
        .trim()
        .split("\n")
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(["d-run"]);
    const onlyPush = await cli("list", "--event=push");
    expect(
      onlyPush.out
        .trim()
        .split("\n")
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(["d-push"]);
    const none = await cli("list", "--status", "queued");
    expect(none.out).toMatch(/^no deliveries match/);
    expect((await cli("list", "--status", "bogus")).code).toBe(2);
  });

  it("shows headers, outcomes per handler and errors; the payload only on request", async () => {
    const calls: string[] = [];
    const { run } = await populate(calls);
    const shown = await cli("show", "d-run");
    expect(shown.code).toBe(0);
    expect(shown.out).toContain("delivery d-run");
    expect(shown.out).toContain("status:       dead");
    expect(shown.out).toContain("x-github-event: workflow_run");
    expect(shown.out).not.toContain("x-hub-signature");
    expect(shown.out).toMatch(/rerun\s+failed\s+attempts=2\s+[\d.]+s\s+error: 503 Service Unavailable \(attempt 2\)/);
    expect(shown.out).not.toContain("payload:");
    const withPayload = await cli("show", "d-run", "--payload");
    expect(withPayload.out).toContain("payload:");
    expect(withPayload.out).toContain(`"id": ${JSON.parse(run.payload).workflow_run.id}`);
    const missing = await cli("show", "nope");
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("no stored delivery nope");
  });

  it("replays a stored delivery: queued again for every handler, then processed", async () => {
    const calls: string[] = [];
    const { engine: reopen } = await populate(calls);
    expect(calls).toEqual(["d-run", "d-run"]);
    const replayed = await cli("replay", "d-run");
    expect(replayed.code).toBe(0);
    expect(replayed.out).toContain("d-run queued again");
    expect((await cli("list", "--status", "queued")).out).toMatch(/^d-run\s+queued\s+.*attempts=0/);

    const { store, handlers } = reopen();
    const engine = testEngine(store, handlers, { maxAttempts: 1 });
    await engine.start();
    await engine.idle();
    await engine.stop(1000);
    store.close();
    expect(calls).toEqual(["d-run", "d-run", "d-run"]);
    expect((await cli("show", "d-run")).out).toMatch(/rerun\s+failed\s+attempts=1/);
    expect((await cli("replay", "nope")).code).toBe(1);
    expect((await cli("frobnicate")).code).toBe(2);
  });
});
