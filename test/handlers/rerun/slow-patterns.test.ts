// Patterns as slow as validation allows, against job logs of several MiB, through the running
// service: matching runs in a worker stopped at its deadline, so while it runs `/healthz` answers
// within 1 s and a signed delivery within 2 s, and the run is not re-run (fail closed) with a reason
// saying the match was stopped at its bound.
import { createHmac, randomUUID } from "node:crypto";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxStack } from "../../../src/sandbox/stack.js";
import { validatePolicyText } from "../../../src/policy/validate.js";
import rerun from "../../../handlers/rerun/index.js";
import { newRepo, outcomesOf, rerunPolicyYaml, rerunPosts, settle, startRerunStack, stewardOf } from "./stack.js";

let stack: SandboxStack;
beforeAll(async () => void (stack = await startRerunStack()));
afterAll(() => stack?.close());

const ping = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "ping")!.examples[0]!;

/**
 * Each compiles to about half the bound on one pattern. Against lines of random `a` and `b` neither
 * the literal prefilter nor the lazy DFA helps: a 16 KiB line costs about 0.7 s per pattern.
 */
const SLOW = ["/a[ab]{990}[#%]/", "/b[ab]{990}[#%]/"];

/** `lines` lines of `width` random `a` and `b` (seeded: the same log every run). */
function abLog(lines: number, width: number): string {
  let seed = 52;
  const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
  const line = () => Array.from({ length: width }, () => (next() & 0x10000 ? "a" : "b")).join("");
  return Array.from({ length: lines }, () => `${line()}\n`).join("");
}

/** Polls `/healthz` and sends signed pings until stopped; returns the slowest answer of each. */
function watch(url: string, webhookUrl: string, secret: string): { stop(): Promise<{ health: number[]; pings: number[]; failures: string[] }> } {
  const health: number[] = [];
  const pings: number[] = [];
  const failures: string[] = [];
  let running = true;
  const timed = async (into: number[], go: () => Promise<Response>) => {
    const start = performance.now();
    try {
      const res = await go();
      await res.text();
      if (res.status >= 300) failures.push(`HTTP ${res.status}`);
    } catch (err) {
      failures.push((err as Error).name);
    }
    into.push(performance.now() - start);
  };
  const healthLoop = (async () => {
    while (running) {
      await timed(health, () => fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5000) }));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const pingLoop = (async () => {
    while (running) {
      const body = JSON.stringify(ping);
      const headers = {
        "content-type": "application/json",
        "x-github-event": "ping",
        "x-github-delivery": randomUUID(),
        "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
      };
      await timed(pings, () => fetch(webhookUrl, { method: "POST", headers, body, signal: AbortSignal.timeout(10_000) }));
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    async stop() {
      running = false;
      await Promise.all([healthLoop, pingLoop]);
      return { health, pings, failures };
    },
  };
}

describe("log patterns as slow as validation allows", () => {
  it("pass validation, are stopped at their bound against MiB logs, and the run is not re-run", async () => {
    const policy = rerunPolicyYaml("", `  rules:\n    - jobs: ["integration-*"]\n      log: [${SLOW.map((s) => JSON.stringify(s)).join(", ")}]\n`);
    expect(validatePolicyText(policy, { file: ".github/steward.yml", handlers: [rerun] }).problems).toEqual([]);

    const { repo } = newRepo(stack, policy);
    const { actions } = stack.hub.domains;
    // 4 MiB: minutes of matching on one thread.
    const log = abLog(256, 16 * 1024);
    const run = actions.startRun({ owner: "acme", repo, workflow: "CI", jobs: [{ name: "integration-db", steps: ["Set up job", "Test", "Complete job"] }] });
    const watcher = watch(stewardOf(stack).url.replace(/\/$/, ""), stack.webhookUrl, stack.config.webhookSecrets[0]!);
    actions.failJob({ runId: run.id, job: "integration-db", step: "Test", log });
    await settle(stack);
    const { health, pings, failures } = await watcher.stop();

    expect(failures).toEqual([]);
    expect(health.length).toBeGreaterThan(5);
    expect(pings.length).toBeGreaterThan(2);
    expect(Math.max(...health)).toBeLessThan(1000);
    expect(Math.max(...pings)).toBeLessThan(2000);
    const outcomes = await outcomesOf(stack, run.id);
    expect(outcomes).toEqual([
      {
        attempt: 1,
        status: "done",
        detail: expect.stringMatching(/not re-run.*integration-db.*rule 1: matching 2 log patterns against a \d+-character job log was stopped at its bound of \d+ ms, so the rule was not evaluated/),
      },
    ]);
    expect(rerunPosts(stack, repo)).toEqual([]);
  }, 60_000);
});
