import { describe, expect, it, vi } from "vitest";
import { join } from "node:path";
import { examples } from "../support/webhook-examples.js";
import { deliveryId, postDelivery } from "./helpers.js";
import { realAppEnv, startChild } from "./child.js";
import { perTest } from "./per-test.js";

const ping = JSON.stringify(
  (examples as { name: string; examples: unknown[] }[]).find((e) => e.name === "ping")!.examples[0],
);

const scope = perTest();
/** A `steward start` child process, killed after the test if it is still running. */
const start = (env: Record<string, string>) =>
  scope.stopAfter(startChild(env), (run) => run.proc.exitCode === null && run.proc.kill("SIGKILL"));

describe("steward start (child process)", () => {
  it("runs as a real app, accepts a delivery, and exits 0 on SIGTERM", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("cli");
    const secret = "cli-webhook-secret-value";
    const run = start({
      ...(await realAppEnv(hub, dir, secret)),
      STEWARD_SHUTDOWN_TIMEOUT: "5s",
      LOG_LEVEL: "info",
    });
    const url = await run.listening;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await postDelivery(url, { body: ping, secret, event: "ping", id: deliveryId() })).status).toBe(202);
    // Handler starts run in the background (the service answers before the API does), so wait for the
    // built-in secrets handler's installation listing, made with a valid app JWT, before stopping.
    const listed = () =>
      hub.control
        .requests()
        .filter((r) => r.path === "/app/installations")
        .map((r) => [r.auth, r.status]);
    await vi.waitFor(() => expect(listed()).toContainEqual(["app", 200]), { timeout: 45_000, interval: 50 });
    run.proc.kill("SIGTERM");
    expect(await run.exited).toBe(0);
    const out = run.out();
    expect(out).toContain("shut down");
    expect(out).not.toContain(secret);
    expect(out).not.toContain("PRIVATE KEY");
  }, 90_000);

  it("a SIGTERM while it is still starting stops it like any other once it is up: closed, exit 0", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("cli-early-stop");
    const run = start({
      ...(await realAppEnv(hub, dir, "cli-webhook-secret-value")),
      STEWARD_SHUTDOWN_TIMEOUT: "5s",
      LOG_LEVEL: "debug",
    });
    // The first log line is written while the service is being built, before it listens.
    await vi.waitFor(() => expect(run.out()).toMatch(/"level":\d+/), { timeout: 60_000, interval: 5 });
    const early = !run.out().includes("listening on");
    run.proc.kill("SIGTERM");
    expect(await run.exited).toBe(0);
    if (early) expect(run.out()).toContain("signal received");
  });

  it("with no APP_ID, runs against the sandbox hub and exits 0 on SIGTERM", async () => {
    const dir = await scope.dataDir("cli");
    const run = start({ PORT: "0", STEWARD_DATA_DIR: join(dir, "data"), LOG_LEVEL: "info" });
    const sandbox = await new Promise<{ webhookUrl: string }>((resolve, reject) => {
      const look = () => {
        const line = run
          .out()
          .split("\n")
          .find((l) => l.includes("sandbox mode"));
        if (line) resolve(JSON.parse(line) as { webhookUrl: string });
      };
      run.proc.stdout!.on("data", look);
      void run.exited.then((code) => reject(new Error(`exited ${code}: ${run.out()}`)));
    });
    const base = new URL(sandbox.webhookUrl).origin;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    run.proc.kill("SIGTERM");
    expect(await run.exited).toBe(0);
    // The banner for the person at the terminal: where the hub is and how to leave the sandbox.
    expect(run.out()).toContain("running against the SANDBOX hub");
    expect(run.out()).toMatch(/To run as a real GitHub App, register app\.yml and set APP_ID/);
  });

  it("stops at start-up with one line naming a malformed variable", async () => {
    const run = start({ APP_ID: "4242", PRIVATE_KEY: "nope-not-a-key", WEBHOOK_SECRET: "x-secret" });
    expect(await run.exited).toBe(1);
    const lines = run.out().trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^steward: PRIVATE_KEY /);
    expect(lines[0]).not.toContain("nope-not-a-key");
  });
});
