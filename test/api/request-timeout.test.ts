// The API client's per-request bound (STEWARD_API_TIMEOUT) and its hard-stop signal, against
// the sandbox hub: a request the hub holds fails with a clear error once the bound passes (and
// the delivery whose handler made it is retried), and many concurrent requests under one
// hard-stop signal leave no listener pile-up on it (no MaxListenersExceededWarning).
import { generateKeyPairSync } from "node:crypto";
import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { pino } from "pino";
import type { Steward } from "../../src/app.js";
import { defineHandler } from "../../src/index.js";
import { createOctokitFactory } from "../../src/api/client.js";
import { inProcessCoordination } from "../../src/coordination/in-process.js";
import { loadConfig } from "../../src/config/env.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";

const COMMENTS = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments";
const silent = pino({ level: "silent" });

let hub: HubHandle | undefined;
let stack: SandboxStack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await hub?.close();
  hub = undefined;
});

function factoryFor(h: HubHandle, env: Record<string, string>, extra: { signal?: AbortSignal; retries?: number } = {}) {
  const config = loadConfig({
    ...h.env,
    PRIVATE_KEY: undefined,
    STEWARD_DATA_DIR: "/nonexistent-unused",
    LOG_LEVEL: "silent",
    ...env,
  });
  return createOctokitFactory({
    config,
    logger: silent,
    coordination: inProcessCoordination(),
    writeIntervalMs: 0,
    ...extra,
  });
}

async function installationOf(h: HubHandle): Promise<number> {
  const app = await factoryFor(h, {}).appOctokit();
  const { data } = await app.request("GET /app/installations");
  return (data as { id: number; account: { login: string } }[]).find((i) => i.account.login === "acme")!.id;
}

describe("STEWARD_API_TIMEOUT", () => {
  it("is 30 s unless set, and takes a duration", () => {
    const { privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs1", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    });
    const base = { APP_ID: "1", PRIVATE_KEY: privateKey, WEBHOOK_SECRET: "s" };
    expect(loadConfig(base).apiTimeoutMs).toBe(30_000);
    expect(loadConfig({ ...base, STEWARD_API_TIMEOUT: "250ms" }).apiTimeoutMs).toBe(250);
    expect(() => loadConfig({ ...base, STEWARD_API_TIMEOUT: "soon" })).toThrow(/STEWARD_API_TIMEOUT/);
  });

  it("a request the hub holds fails with a clear error after the bound, not after the hub answers", async () => {
    hub = await createHub();
    const installation = await installationOf(hub);
    // The bound applies to every request, the unheld ones too (to this process's own hub): 300 ms is
    // not enough for them on a loaded machine; 2.5 s is, and still far below the 20 s hold.
    const octokit = await factoryFor(hub, { STEWARD_API_TIMEOUT: "2500ms" }, { retries: 0 }).octokitFor(installation);
    await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" }); // token minted, route warm
    hub.control.setFault("GET /repos/{owner}/{repo}", { latencyMs: 20_000, times: 1 });
    const started = Date.now();
    const error = await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" }).then(
      () => undefined,
      (e: unknown) => e as Error & { status?: number },
    );
    const took = Date.now() - started;
    expect(error).toBeDefined();
    expect(error!.message).toMatch(
      /^GitHub API request GET http:\/\/127\.0\.0\.1:\d+\/repos\/acme\/web got no answer within 2500 ms \(STEWARD_API_TIMEOUT\)$/,
    );
    expect(error!.message).not.toMatch(/ghs_|token/i);
    // Before the hub would have answered (20 s).
    expect(took).toBeLessThan(20_000);
    // The hold was one request: the next one is answered.
    expect((await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })).status).toBe(200);
  });

  it("the delivery whose handler's request timed out fails with that error and is retried", async () => {
    const commenter = defineHandler({
      name: "commenter",
      events: ["pull_request.opened"],
      async handle(ctx) {
        const { repository, pull_request: pr } = ctx.payload;
        await ctx.octokit.rest.issues.createComment({
          owner: repository.owner.login,
          repo: repository.name,
          issue_number: pr.number,
          body: "hello",
        });
        return { status: "done", summary: "commented" };
      },
    });
    // 2.5 s, not 300 ms: the handler's other requests (token, retry) must answer within it on a loaded machine.
    stack = await startSandboxStack({
      handlers: [commenter],
      env: { STEWARD_API_TIMEOUT: "2500ms", LOG_LEVEL: "silent" },
    });
    // Held before the route runs: the first comment never lands.
    stack.hub.control.setFault(COMMENTS, { latencyMs: 20_000, times: 1 });
    const pr = stack.hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "timeout",
      title: "timeout",
      files: { "t.txt": "x\n" },
    });
    await stack.hub.control.settled();
    const delivery = stack.hub.control
      .deliveries()
      .find(
        (d) =>
          d.event === "pull_request" &&
          d.action === "opened" &&
          (d.payload as { number?: number }).number === pr.number,
      )!;
    const store = (stack.steward as unknown as Steward).store;
    const record = await vi.waitFor(
      async () => {
        const r = await store.deliveries.getDelivery(delivery.guid);
        if (r?.outcomes.find((o) => o.handler === "commenter")?.status !== "done") throw new Error("not done yet");
        return r;
      },
      { timeout: 60_000, interval: 50 },
    );
    const runs = record.attempts.filter((a) => a.handler === "commenter");
    expect(runs.map((a) => a.status)).toEqual(["failed", "done"]);
    expect(runs[0]!.detail).toMatch(/got no answer within 2500 ms \(STEWARD_API_TIMEOUT\)/);
    expect(
      stack.hub.control.effects.filter((e) => e.kind === "issues.commented" && e.detail.number === pr.number),
    ).toHaveLength(1);
  }, 120_000);
});

describe("the hard-stop signal", () => {
  it("500 requests, 50 at a time, under one signal: one listener on it, no MaxListenersExceededWarning; the stop still aborts those in flight", async () => {
    hub = await createHub();
    const installation = await installationOf(hub);
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      const hardStop = new AbortController();
      const octokit = await factoryFor(hub, {}, { signal: hardStop.signal }).octokitFor(installation);
      // fetch (undici) drops its listener on a signal only when the request object is garbage
      // collected (raising the signal's limit to 1,500 first): a signal shared by every request
      // gathers one listener per request between two collections, and warns past 1,500 (a
      // 1,000-repository sync). Here the hard stop keeps one listener, however many went by.
      let answered = 0;
      for (let batch = 0; batch < 10; batch++) {
        const answers = await Promise.all(
          Array.from({ length: 50 }, () =>
            octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" }),
          ),
        );
        answered += answers.filter((r) => r.status === 200).length;
        expect(getEventListeners(hardStop.signal, "abort").length).toBeLessThanOrEqual(1);
      }
      expect(answered).toBe(500);
      // Held requests in flight when the stop fires are cut off, not waited for.
      hub.control.setFault("GET /repos/{owner}/{repo}", { latencyMs: 20_000 });
      const held = Promise.allSettled(
        Array.from({ length: 20 }, () => octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })),
      );
      await new Promise((r) => setTimeout(r, 200));
      hardStop.abort(new Error("shutdown bound reached"));
      const settled = await held;
      expect(settled.every((s) => s.status === "rejected")).toBe(true);
      await expect(octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })).rejects.toThrow(
        /stopped/,
      );
      // Warnings are emitted on the next tick.
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
    // 520 requests through Node's fetch on a shared, loaded machine.
  }, 120_000);
});
