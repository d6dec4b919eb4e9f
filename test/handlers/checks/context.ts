// A HandlerContext around the sandbox hub for handler tests: Steward's API client for the
// installation, the real reporter, an in-memory store.
import pino from "pino";
import type { HandlerContext, HandlerModule } from "../../../src/handler.js";
import { createCheckReporter } from "../../../src/check-runs/reporter.js";
import type { StewardConfig } from "../../../src/config/types.js";
import type { AuditEntry, Store } from "../../../src/store/types.js";
import { onceFor } from "../../../src/dispatch/once.js";
import type { HubClient } from "../../support/hub-client.js";

export function memoryStore(): Store {
  const data = new Map<string, unknown>();
  const audits: Required<AuditEntry>[] = [];
  return {
    async claim(key, opts) {
      if (data.has(key)) return false;
      data.set(key, opts?.value ?? true);
      return true;
    },
    async release(key) {
      data.delete(key);
    },
    async replaceIf(key, expect, next) {
      const held = data.get(key) as Record<string, unknown> | undefined;
      if (typeof held !== "object" || held === null || held[expect.field] !== expect.equals) return false;
      if (next === undefined) data.delete(key);
      else data.set(key, structuredClone(next.value));
      return true;
    },
    async get<T>(key: string) {
      return structuredClone(data.get(key)) as T | undefined;
    },
    async set(key, value) {
      data.set(key, structuredClone(value));
    },
    async delete(key) {
      data.delete(key);
    },
    async list<T>(prefix: string) {
      return [...data.entries()]
        .filter(([k]) => k.startsWith(prefix))
        .sort()
        .map(([key, value]) => ({ key, value: value as T, updatedAt: new Date(0) }));
    },
    async audit(entry) {
      audits.push({ at: new Date(0), ...entry });
    },
    async auditLog() {
      return audits;
    },
  };
}

export function handlerContext<P>(
  gh: HubClient,
  handler: HandlerModule<P>,
  event: { name: string; payload: Record<string, any> },
  opts: { policy?: P; store?: Store; config?: Partial<StewardConfig> } = {},
): HandlerContext<any, P> {
  const octokit = gh.octokit;
  const config = { adminRepo: ".github", appId: gh.appId, statusUrl: undefined, ...opts.config } as StewardConfig;
  const deliveryId = "d-" + Math.random().toString(16).slice(2);
  const store = opts.store ?? memoryStore();
  return {
    deliveryId,
    name: event.name,
    action: event.payload.action,
    payload: event.payload as never,
    installationId: gh.installationId,
    now: () => new Date(),
    signal: new AbortController().signal,
    octokit,
    policy: opts.policy ?? (handler.policy?.defaults as P),
    loadPolicy: async () => {
      throw new Error("not used");
    },
    log: pino({ level: "silent" }),
    store,
    once: onceFor(store, handler.name, `delivery ${deliveryId}`),
    scheduler: { schedule: async () => {}, cancel: async () => {} },
    checks: createCheckReporter(octokit, {
      appId: config.appId,
      ...(config.statusUrl ? { detailsUrl: config.statusUrl } : {}),
    }),
    attempt: 1,
    config,
  };
}
