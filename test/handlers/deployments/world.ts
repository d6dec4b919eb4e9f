// The deployments handler in the full sandbox stack: hub (demo seed) + Steward, with the handler
// reading the hub's clock. Helpers drive a deploy workflow and read what the hub recorded.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { createSteward } from "../../../src/app.js";
import { hubClock, startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import type { Effect, JobSpec } from "@steward/sandbox-hub";
import { createDeploymentsHandler } from "../../../handlers/deployments/index.js";
import type { HandlerModule } from "../../../src/index.js";

export const ORG = "acme";
export const REPO = "web";
export const REVIEWER = "release-manager";

export interface World {
  stack: SandboxStack;
  /** Every line Steward logged (debug level). */
  logLines: string[];
  /** The Steward currently serving (replaced by `restart`). */
  steward: SandboxStack["steward"];
  pushPolicy(yaml: string): string;
  /** An environment guarded by Steward as a custom protection rule, and/or with required reviewers. */
  environment(name: string, o?: { rule?: boolean; reviewers?: string[] }): void;
  startDeploy(o: { branch?: string; sha?: string; jobs: JobSpec[] }): number;
  completeJob(runId: number, job: string, conclusion?: "success" | "failure"): void;
  /** Let the hub deliver and Steward process everything queued so far. */
  settle(): Promise<void>;
  /**
   * Set the clock Steward decides by: the hub's clock plus an offset. (Moving the hub's own clock
   * far would also move it past the app JWTs' validity, as GitHub's would.)
   */
  setClock(date: Date): void;
  /**
   * Stop the clock Steward decides by at `date` until the next `setClock` (like that one, nothing
   * under `stewardClock`): a decision made meanwhile is made at `date` however slow the machine,
   * so a test sees it before the time it waits for comes.
   */
  stopClock(date: Date): void;
  /** The clock Steward decides by. */
  now(): Date;
  /** Poll `predicate` while settling, until it holds (bounded). */
  until(predicate: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  effects(kind?: string): Effect[];
  /** Stop Steward and start a new one on the same data directory (the hub keeps running). */
  restart(between?: () => void): Promise<void>;
  close(): Promise<void>;
}

/**
 * `stewardClock`: the handler as shipped, deciding by `ctx.now()` (Steward's clock, which the stack
 * sets to the hub's); `setClock` then does nothing (move the hub's clock instead). `extraHandlers`
 * run beside it (e.g. `checks`, to read steward/config on a pull request).
 */
export async function createWorld(
  o: { stewardClock?: boolean; extraHandlers?: HandlerModule<any>[] } = {},
): Promise<World> {
  const dataDir = await mkdtemp(join(tmpdir(), "steward-deployments-"));
  let offsetMs = 0;
  let stoppedAt: Date | undefined;
  let clock: () => Date = () => new Date();
  const handlers = () => [
    o.stewardClock ? createDeploymentsHandler() : createDeploymentsHandler({ now: () => clock() }),
    ...(o.extraHandlers ?? []),
  ];
  const logLines: string[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => void logLines.push(line) });
  const stack = await startSandboxStack({ handlers: handlers(), dataDir, logger });
  const { control, domains } = stack.hub;
  clock = () => stoppedAt ?? new Date(control.now().getTime() + offsetMs);
  const repo = () => control.repo(ORG, REPO)!;

  const world: World = {
    stack,
    logLines,
    steward: stack.steward,
    pushPolicy(yaml) {
      return control.pushFiles({
        owner: ORG,
        repo: REPO,
        files: { ".github/steward.yml": yaml },
        message: "deployments policy",
      }).sha;
    },
    environment(name, o = {}) {
      domains.deployments.putEnvironment(repo(), name, {
        ...(o.rule ? { protectionApps: [stack.hub.hub.appId] } : {}),
        ...(o.reviewers ? { reviewers: o.reviewers } : {}),
      });
    },
    startDeploy(o) {
      return domains.actions.startRun({
        owner: ORG,
        repo: REPO,
        workflow: "Deploy",
        ...(o.branch ? { branch: o.branch } : {}),
        ...(o.sha ? { sha: o.sha } : {}),
        jobs: o.jobs,
      }).id;
    },
    completeJob(runId, job, conclusion = "success") {
      domains.actions.completeJob({ runId, job, conclusion });
    },
    setClock(date) {
      offsetMs = date.getTime() - control.now().getTime();
      stoppedAt = undefined;
    },
    stopClock(date) {
      stoppedAt = date;
    },
    now: () => clock(),
    async settle() {
      for (let i = 0; i < 4; i++) {
        await domains.idle();
        await control.settled();
        await world.steward.engine.idle();
      }
    },
    // Generous: CI's 2 cores are shared with other work.
    async until(predicate, what, timeoutMs = 60_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        await world.settle();
        if (predicate()) return;
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    effects(kind) {
      return domains.effects.of("deployments", kind);
    },
    async restart(between) {
      await world.steward.close();
      between?.();
      world.steward = await createSteward({
        config: stack.config,
        handlers: handlers(),
        logger,
        clock: hubClock(stack.hub),
      });
      control.setWebhookUrl(`${world.steward.url.replace(/\/$/, "")}${stack.config.webhookPath}`);
    },
    async close() {
      if (world.steward !== stack.steward) {
        await world.steward.close();
        control.setWebhookUrl(undefined);
      }
      await stack.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return world;
}
