// Two services on one SQLite data directory (two pods on one volume) would both run the same
// deliveries: the second is refused at start, naming the first, and a killed service never
// blocks the next one.
import { describe, expect, it } from "vitest";
import { realAppEnv, startChild } from "./child.js";
import { perTest } from "./per-test.js";

const scope = perTest();
const start = (env: Record<string, string>) =>
  scope.stopAfter(startChild(env), (run) => run.proc.exitCode === null && run.proc.kill("SIGKILL"));

describe("one service per SQLite data directory", () => {
  it("refuses a second service on the same directory with one clear line, and takes over from one killed with SIGKILL", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("lock");
    const env = { ...(await realAppEnv(hub, dir, "lock-webhook-secret-value")), LOG_LEVEL: "info" };
    const first = start(env);
    const url = await first.listening;
    expect((await fetch(`${url}/readyz`)).status).toBe(200);

    const second = start(env);
    expect(await second.exited).not.toBe(0);
    const said = second.out();
    expect(said).toMatch(/is in use by another Steward service \(process \d+ on /);
    expect(said).toContain("STEWARD_REDIS_URL");
    // The first keeps serving.
    expect((await fetch(`${url}/readyz`)).status).toBe(200);

    first.proc.kill("SIGKILL");
    await first.exited;
    const third = start(env);
    const again = await third.listening;
    expect((await fetch(`${again}/readyz`)).status).toBe(200);
    third.proc.kill("SIGTERM");
    expect(await third.exited).toBe(0);
  }, 120_000);
});
