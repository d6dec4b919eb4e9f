// A handler context for the rerun handler called directly: Steward's API client for the sandbox
// hub's installation, an in-memory store, and a scheduler and check reporter that record what
// the handler asked of them (the reporter itself is tested against the hub in check-runs/).
import pino from "pino";
import { onceFor } from "../../../src/dispatch/once.js";
import type { HandlerContext, ScheduleRequest, TaskContext } from "../../../src/handler.js";
import type { CheckReport } from "../../../src/check-runs/types.js";
import type { AuditEntry, KeyValue, Store } from "../../../src/store/types.js";
import type { RerunPolicy } from "../../../handlers/rerun/policy.js";
import type { HubClient } from "../../support/hub-client.js";

/** An in-memory Store with the contract's semantics (claims, TTLs ignored: tests are short). */
export class MemoryStore implements Store {
  readonly kv = new Map<string, { value: unknown; updatedAt: Date }>();
  readonly audits: Required<AuditEntry>[] = [];
  async claim(key: string, opts?: { value?: unknown }): Promise<boolean> {
    if (this.kv.has(key)) return false;
    this.kv.set(key, { value: opts?.value ?? true, updatedAt: new Date() });
    return true;
  }
  async release(key: string) {
    this.kv.delete(key);
  }
  async replaceIf(key: string, expect: { field: string; equals: string }, next?: { value: unknown }) {
    const held = this.kv.get(key)?.value as Record<string, unknown> | undefined;
    if (typeof held !== "object" || held === null || held[expect.field] !== expect.equals) return false;
    if (next === undefined) this.kv.delete(key);
    else this.kv.set(key, { value: structuredClone(next.value), updatedAt: new Date() });
    return true;
  }
  async get<T>(key: string) {
    return this.kv.get(key)?.value as T | undefined;
  }
  async set(key: string, value: unknown) {
    this.kv.set(key, { value: structuredClone(value), updatedAt: new Date() });
  }
  async delete(key: string) {
    this.kv.delete(key);
  }
  async list<T>(prefix: string): Promise<KeyValue<T>[]> {
    return [...this.kv]
      .filter(([k]) => k.startsWith(prefix))
      .sort()
      .map(([key, v]) => ({ key, value: v.value as T, updatedAt: v.updatedAt }));
  }
  async audit(entry: AuditEntry) {
    this.audits.push({ ...entry, at: entry.at ?? new Date() });
  }
  async auditLog(filter?: { kind?: string }) {
    return this.audits.filter((a) => !filter?.kind || a.kind === filter.kind);
  }
}

export interface Harness {
  store: MemoryStore;
  scheduled: ScheduleRequest[];
  reports: CheckReport[];
  logLines: string[];
  handlerContext(
    payload: Record<string, unknown>,
    policy: RerunPolicy,
    deliveryId?: string,
  ): HandlerContext<any, RerunPolicy>;
  taskContext(request: ScheduleRequest): TaskContext<RerunPolicy>;
}

export function makeHarness(gh: HubClient): Harness {
  const store = new MemoryStore();
  const scheduled: ScheduleRequest[] = [];
  const reports: CheckReport[] = [];
  const logLines: string[] = [];
  const log = pino({ level: "debug" }, { write: (line: string) => void logLines.push(line) });
  const scheduler = {
    async schedule(r: ScheduleRequest) {
      scheduled.push(structuredClone(r));
    },
    async cancel() {},
  };
  const checks = {
    async report(r: CheckReport) {
      reports.push(r);
      return { id: reports.length, html_url: null };
    },
  };
  const common = {
    octokit: gh.octokit,
    log,
    store,
    scheduler,
    checks,
    attempt: 1,
    config: {} as never,
    now: () => new Date(),
    signal: new AbortController().signal,
  };
  return {
    store,
    scheduled,
    reports,
    logLines,
    handlerContext(payload, policy, deliveryId = crypto.randomUUID()) {
      return {
        ...common,
        // Owned by the delivery, as the framework's: a retry of the same delivery carries on its own effect.
        once: onceFor(store, "rerun", `delivery ${deliveryId}`),
        deliveryId,
        name: "workflow_run",
        action: payload.action as string,
        payload: payload as never,
        installationId: gh.installationId,
        policy,
        loadPolicy: async () => policy,
      };
    },
    taskContext(request) {
      return {
        ...common,
        once: onceFor(store, "rerun", `task ${request.key}`),
        key: request.key,
        data: structuredClone(request.data),
        installationId: request.installationId,
        loadPolicy: async () => {
          throw new Error("unused");
        },
      };
    },
  };
}
