// A handler context for the deployments handler called directly: Steward's API client for the
// sandbox hub's installation, an in-memory store, a scheduler that records what it was asked.
import pino from "pino";
import { onceFor } from "../../../src/dispatch/once.js";
import type { HandlerContext, ScheduleRequest, TaskContext } from "../../../src/handler.js";
import type { DeploymentsPolicy } from "../../../handlers/deployments/policy.js";
import { MemoryStore } from "../rerun/harness.js";
import type { HubClient } from "../../support/hub-client.js";

export interface Harness {
  store: MemoryStore;
  scheduled: ScheduleRequest[];
  cancelled: string[];
  logLines: string[];
  context(
    name: string,
    payload: Record<string, any>,
    policy: DeploymentsPolicy | undefined,
  ): HandlerContext<any, DeploymentsPolicy>;
  task(request: ScheduleRequest, policy: DeploymentsPolicy): TaskContext<DeploymentsPolicy>;
}

export function makeHarness(gh: HubClient, store = new MemoryStore()): Harness {
  const scheduled: ScheduleRequest[] = [];
  const cancelled: string[] = [];
  const logLines: string[] = [];
  const log = pino({ level: "debug" }, { write: (line: string) => void logLines.push(line) });
  const scheduler = {
    async schedule(r: ScheduleRequest) {
      scheduled.push(structuredClone(r));
    },
    async cancel(key: string) {
      cancelled.push(key);
    },
  };
  const checks = { report: async () => ({ id: 1, html_url: null }) };
  const config = { apiUrl: gh.hub.url } as never;
  const common = {
    octokit: gh.octokit,
    log,
    store,
    once: onceFor(store, "deployments", "test"),
    scheduler,
    checks,
    attempt: 1,
    config,
    now: () => new Date(),
    signal: new AbortController().signal,
  };
  return {
    store,
    scheduled,
    cancelled,
    logLines,
    context(name, payload, policy) {
      return {
        ...common,
        deliveryId: crypto.randomUUID(),
        name,
        action: payload.action,
        payload: payload as never,
        installationId: gh.installationId,
        policy,
        loadPolicy: async () => policy!,
      };
    },
    task(request, policy) {
      return {
        ...common,
        key: request.key,
        data: structuredClone(request.data),
        installationId: request.installationId,
        loadPolicy: async () => policy,
      };
    },
  };
}
