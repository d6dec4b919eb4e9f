// Section 2: end-to-end latency through the sandbox stack. The hub runs workflows at a steady
// rate; Steward's HTTP server stamps when each delivery reached it (arrivals.ts); the hub's own
// request records say when Steward's answer (the re-run request, the protection-rule answer)
// arrived: their `receivedAt`, not `at` (when the hub had answered it), since what the hub does
// with the answer (advancing the run, sending the next webhooks) is not Steward's latency.
//
// The hub runs in a process of its own (servers/hub-server.mjs), as GitHub is not in Steward's
// process: what it does for each run (fourteen signed webhooks sent, every request checked
// against the OpenAPI description) is not on Steward's event loop. Its request records are
// moved onto this process's clock: both processes read the machine's monotonic clock under
// `performance.now()`, and the hub says where its origin lies on it. Two rows keep the hub in
// Steward's process (as `steward start` in sandbox mode has it), the section's form before.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import rerun from "../../handlers/rerun/index.js";
import { createDeploymentsHandler } from "../../handlers/deployments/index.js";
import { createSteward } from "../../src/app.js";
import { loadConfig } from "../../src/config/env.js";
import type { HubEnv } from "../../src/sandbox/hub.js";
import { sandboxApiOptions, sandboxStewardEnv, startSandboxStack } from "../../src/sandbox/stack.js";
import { stampArrivals, type ArrivalStamps } from "./arrivals.js";
import { startChild, type ServerChild } from "./child.js";
import { summarise, type Summary } from "./stats.js";
import { settingsFromEnv } from "./servers/bench-steward.mjs";

/** Where the hub ran: its own process (as GitHub is elsewhere), or Steward's (sharing its event loop). */
export type HubPlace = "own process" | "Steward's process";

export interface E2eRow {
  flow: "workflow_run.completed -> re-run" | "deployment_protection_rule -> answer";
  /** Rows of runs before 2026-11-29 have none: the hub was in Steward's process then. */
  hub?: HubPlace;
  rate: number;
  sent: number;
  answered: number;
  latency: Summary;
  /** From arrival to Steward's first API request about the run: queueing and pickup, before the handler's own work. */
  firstCall: Summary;
  /** API requests Steward made about the run before its answer (median). */
  callsBeforeAnswer: number;
  /**
   * Every API answer held back this long by the hub (a network between Steward and the API; 0:
   * none, the hub answers at once). Reads asked together wait together then, and the number of
   * round trips in a row is what the latency is made of.
   */
  apiDelayMs?: number;
  /** The policy reads failed jobs' logs when the jobs finish (`rerun.read_ahead`). */
  readAhead?: boolean;
}

export interface E2eResult {
  rows: E2eRow[];
}

const ORG = "acme";
// A rule that reads the failed job's log, as a transient-failure rule does: the log's two round
// trips (the API's redirect, then the storage host) are part of the flow.
const RERUN_POLICY = "rerun:\n  enabled: true\n  delay: 0s\n  max_attempts: 2\n  rules:\n    - log: [ECONNRESET]\n";
const DEPLOY_POLICY = "deployments:\n  environments:\n    production:\n      branches: [main]\n";

/** The network to the API of the rows that have one: each answer this late (a nearby region's round trip). */
const API_DELAY_MS = 20;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A request the hub answered, its arrival on this process's `performance.now()` clock. */
interface HubRequest {
  method: string;
  path: string;
  status: number;
  auth: string;
  receivedAtHr: number;
}

/** A delivery the hub sent: what the section reads of it. */
interface HubDelivery {
  /** The hub's id for it: increasing, so a row's deliveries are those after the last one before it. */
  id: number;
  guid: string;
  event: string;
  action?: string;
  runId?: number;
  callbackUrl?: string;
}

/** What a flow does to the hub and reads back, wherever the hub runs. */
interface HubView {
  place: HubPlace;
  /** A control function (`target` "control") or a domain's (`target` "domains.actions"). */
  call(target: string, fn: string, ...args: unknown[]): Promise<any>;
  requestsFrom(from: number): Promise<HubRequest[]>;
  /** Deliveries the hub still keeps (its latest few thousand) after the one with id `id`. */
  deliveriesAfter(id: number): Promise<HubDelivery[]>;
  lastDeliveryId(): Promise<number>;
}

/** The hub of a sandbox stack in this process. */
function localView(stack: Awaited<ReturnType<typeof startSandboxStack>>): HubView {
  const targets: Record<string, any> = { control: stack.hub.control, domains: stack.hub.domains };
  return {
    place: "Steward's process",
    call: async (target, fn, ...args) => {
      const [root, domain] = target.split(".");
      const object = domain ? targets[root!][domain] : targets[root!];
      return object[fn](...args);
    },
    requestsFrom: async (from) => stack.hub.control.requests().slice(from),
    deliveriesAfter: async (after) =>
      (stack.hub.control.deliveries() as { id: number; guid: string; event: string; payload: Record<string, any> }[]).filter((d) => d.id > after).map((d) => ({
        id: d.id,
        guid: d.guid,
        event: d.event,
        action: d.payload.action,
        runId: d.payload.workflow_run?.id,
        callbackUrl: d.payload.deployment_callback_url,
      })),
    lastDeliveryId: async () => stack.hub.control.deliveries().at(-1)?.id ?? 0,
  };
}

/** The hub in its own process (servers/hub-server.mjs), over IPC; its clock moved onto this one. */
async function childView(hub: ServerChild): Promise<HubView> {
  const ask = async <T>(message: Record<string, unknown>): Promise<T> => {
    const answer = await hub.ask<{ result?: T; error?: string }>(message);
    if (answer.error !== undefined) throw new Error(`hub: ${answer.error}`);
    return answer.result as T;
  };
  const theirs = await ask<{ monotonicNs: string; now: number }>({ e2e: "clock" });
  const mine = { monotonicNs: process.hrtime.bigint(), now: performance.now() };
  // Each side's performance.now() origin on the machine's monotonic clock, in ms: their times plus
  // the difference are ours.
  const origin = (ns: bigint, now: number) => Number(ns / 1000n) / 1000 - now;
  const shift = origin(BigInt(theirs.monotonicNs), theirs.now) - origin(mine.monotonicNs, mine.now);
  return {
    place: "own process",
    call: (target, fn, ...args) => ask({ e2e: "call", target, fn, args }),
    requestsFrom: async (from) => (await ask<HubRequest[]>({ e2e: "requestsFrom", from })).map((r) => ({ ...r, receivedAtHr: r.receivedAtHr + shift })),
    deliveriesAfter: (id) => ask({ e2e: "deliveriesAfter", id }),
    lastDeliveryId: () => ask({ e2e: "lastDeliveryId" }),
  };
}

/** The hub's request log, read as it grows (the part not read yet, each time). */
class RequestLog {
  readonly entries: HubRequest[] = [];
  constructor(private readonly hub: HubView) {}
  async update(): Promise<HubRequest[]> {
    this.entries.push(...(await this.hub.requestsFrom(this.entries.length)));
    return this.entries;
  }
}

/** The run id an answer request is about: /repos/o/r/actions/runs/{id}/(rerun-failed-jobs|rerun|deployment_protection_rule). */
function answeredRuns(requests: readonly HubRequest[], suffix: RegExp): Map<number, number> {
  const out = new Map<number, number>();
  for (const r of requests) {
    const m = /\/actions\/runs\/(\d+)\/([a-z_-]+)$/.exec(r.path);
    if (r.method === "POST" && m && suffix.test(m[2]!) && r.status < 300 && !out.has(Number(m[1]))) out.set(Number(m[1]), r.receivedAtHr);
  }
  return out;
}

/**
 * Waits for every run's answer. Polled every quarter second, after the runs were started: the
 * log is read only from where it was last read, so the polling adds little to the loop measured.
 */
async function waitAnswered(log: RequestLog, suffix: RegExp, runIds: number[], timeoutMs: number): Promise<Map<number, number>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const answered = answeredRuns(await log.update(), suffix);
    if (runIds.every((id) => answered.has(id)) || Date.now() > end) return answered;
    await sleep(250);
  }
}

/** Both ends are stamped on one monotonic clock: latencies kept to a tenth of a millisecond. */
const tenths = (ms: number) => Math.round(ms * 10) / 10;

interface Timings {
  latency: Summary;
  firstCall: Summary;
  callsBeforeAnswer: number;
  answered: number;
}

/** A delivery the hub sent, and when it reached Steward. */
interface Arrival extends HubDelivery {
  at: number;
}

/** The hub's deliveries after the one with id `after` that reached Steward, in the order the hub sent them. */
async function arrivals(hub: HubView, stamps: ArrivalStamps, after: number): Promise<Arrival[]> {
  const out: Arrival[] = [];
  for (const d of await hub.deliveriesAfter(after)) {
    const at = stamps.at(d.guid);
    if (at !== undefined) out.push({ ...d, at });
  }
  return out;
}

/** The ids of the first attempt's jobs of a run (the deployment flow's runs have none that matter). */
async function jobsOf(hub: HubView, runId: number): Promise<number[]> {
  try {
    return ((await hub.call("domains.actions", "describeRun", runId, 1)) as { jobs?: { id: number }[] }).jobs?.map((j) => j.id) ?? [];
  } catch {
    return [];
  }
}

/** Per run: the delivery's arrival at Steward, Steward's first request about the run, its answer. */
async function timings(row: RowContext, answered: Map<number, number>, runOf: (a: Arrival) => number | undefined): Promise<Timings> {
  const requests = (await row.log.update()).filter((r) => r.auth === "installation");
  const total: number[] = [];
  const first: number[] = [];
  const calls: number[] = [];
  const seen = new Set<number>();
  for (const a of await arrivals(row.hub, row.stamps, row.deliveriesAfter)) {
    const runId = runOf(a);
    if (runId === undefined || seen.has(runId)) continue;
    seen.add(runId);
    const at = answered.get(runId);
    if (at === undefined) continue;
    total.push(tenths(at - a.at));
    // About the run: the run itself, its jobs list, and its first attempt's job logs.
    const jobs = (await jobsOf(row.hub, runId)).map((id) => `/actions/jobs/${id}/`);
    const about = requests.filter((r) => r.receivedAtHr >= a.at && r.receivedAtHr <= at && (r.path.includes(`/actions/runs/${runId}`) || jobs.some((j) => r.path.includes(j))));
    if (about[0]) first.push(tenths(about[0].receivedAtHr - a.at));
    calls.push(about.length);
  }
  return { latency: summarise(total), firstCall: summarise(first), callsBeforeAnswer: summarise(calls).p50, answered: total.length };
}

/** One row's view of the hub: the hub's request log, and the last delivery before the row's. */
interface RowContext {
  hub: HubView;
  stamps: ArrivalStamps;
  log: RequestLog;
  deliveriesAfter: number;
}

async function rowContext(hub: HubView, stamps: ArrivalStamps, log: RequestLog): Promise<RowContext> {
  return { hub, stamps, log, deliveriesAfter: await hub.lastDeliveryId() };
}

interface FlowOptions {
  rate: number;
  count: number;
  apiDelayMs?: number;
  readAhead?: boolean;
}

async function rerunFlow(row: RowContext, o: FlowOptions): Promise<E2eRow> {
  const { hub } = row;
  const repo = `bench-rerun-${process.pid}-${hub.place === "own process" ? "own" : "shared"}-${o.apiDelayMs ?? 0}${o.readAhead ? "-ahead" : ""}`;
  if (o.apiDelayMs) {
    await hub.call("control", "setFault", "/**", { latencyMs: o.apiDelayMs });
    // The log's storage host is as far away as the API (faults naming it are the only ones it takes).
    await hub.call("control", "setFault", "/_sandbox/blobs/**", { latencyMs: o.apiDelayMs });
  }
  await hub.call("control", "createRepo", { owner: ORG, name: repo, files: { ".github/steward.yml": RERUN_POLICY + (o.readAhead ? "  read_ahead: true\n" : "") } });
  const start = async (): Promise<number> => {
    const run = await hub.call("domains.actions", "startRun", { owner: ORG, repo, workflow: "CI", jobs: [{ name: "test", steps: ["Set up job", "Test", "Complete job"] }] });
    await hub.call("domains.actions", "failJob", { runId: run.id, job: "test", step: "Test", log: "Error: read ECONNRESET" });
    return run.id;
  };
  // One warm-up run loads the policy and the installation token, as a running service would have.
  await waitAnswered(row.log, /^rerun/, [await start()], 30_000);
  const measured = await rowContext(hub, row.stamps, row.log);
  const runIds: number[] = [];
  for (let i = 0; i < o.count; i++) {
    runIds.push(await start());
    await sleep(1000 / o.rate);
  }
  const answered = await waitAnswered(row.log, /^rerun/, runIds, 60_000);
  await hub.call("control", "clearFaults");
  const wanted = new Set(runIds);
  const t = await timings(measured, answered, (a) => (a.event === "workflow_run" && a.action === "completed" && a.runId !== undefined && wanted.has(a.runId) ? a.runId : undefined));
  return { flow: "workflow_run.completed -> re-run", hub: hub.place, rate: o.rate, sent: runIds.length, ...t, ...(o.apiDelayMs ? { apiDelayMs: o.apiDelayMs } : {}), ...(o.readAhead ? { readAhead: true } : {}) };
}

async function protectionRuleFlow(row: RowContext, o: FlowOptions): Promise<E2eRow> {
  const { hub } = row;
  const repo = `bench-deploy-${process.pid}-${hub.place === "own process" ? "own" : "shared"}`;
  await hub.call("control", "createRepo", { owner: ORG, name: repo, files: { ".github/steward.yml": DEPLOY_POLICY } });
  await hub.call("domains.deployments", "configureEnvironment", { owner: ORG, repo, environment: "production", protectedByApp: true });
  const start = async (): Promise<number> => (await hub.call("domains.actions", "startRun", { owner: ORG, repo, workflow: "Deploy", jobs: [{ name: "deploy", environment: "production" }] })).id;
  await waitAnswered(row.log, /^deployment_protection_rule$/, [await start()], 30_000);
  const measured = await rowContext(hub, row.stamps, row.log);
  const runIds: number[] = [];
  for (let i = 0; i < o.count; i++) {
    runIds.push(await start());
    await sleep(1000 / o.rate);
  }
  const answered = await waitAnswered(row.log, /^deployment_protection_rule$/, runIds, 60_000);
  const wanted = new Set(runIds);
  const runOf = (a: Arrival) => {
    if (a.event !== "deployment_protection_rule") return undefined;
    const m = /\/runs\/(\d+)\//.exec(String(a.callbackUrl ?? ""));
    return m && wanted.has(Number(m[1])) ? Number(m[1]) : undefined;
  };
  return { flow: "deployment_protection_rule -> answer", hub: hub.place, rate: o.rate, sent: runIds.length, ...(await timings(measured, answered, runOf)) };
}

type Flow = (row: RowContext, o: FlowOptions) => Promise<E2eRow>;

const HANDLERS = () => [rerun, createDeploymentsHandler()];

/** The hub in its own process and Steward in this one, wired to it as the sandbox stack wires them. */
async function startApart(durability: string): Promise<{ hub: HubView; webhookPath: string; close(): Promise<void> }> {
  const child = await startChild(fileURLToPath(new URL("./servers/hub-server.mjs", import.meta.url)), {}, "/");
  const dataDir = await mkdtemp(join(tmpdir(), "steward-bench-e2e-"));
  try {
    const hub = await childView(child);
    const { STEWARD_REVIEWER_TOKEN, ...env } = await child.ask<{ result: HubEnv & { STEWARD_REVIEWER_TOKEN: string } }>({ e2e: "stackEnv" }).then((a) => a.result);
    const extra = { ...settingsFromEnv(), STEWARD_DURABILITY: durability };
    const config = loadConfig(sandboxStewardEnv(env, STEWARD_REVIEWER_TOKEN, { dataDir, env: extra }));
    const steward = await createSteward({ config, ...sandboxApiOptions(extra), handlers: HANDLERS() });
    await hub.call("control", "setWebhookUrl", `${steward.url.replace(/\/$/, "")}${config.webhookPath}`);
    return {
      hub,
      webhookPath: config.webhookPath,
      async close() {
        await steward.close();
        await child.stop();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await child.stop();
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
}

/** The hub and Steward in this process: the sandbox stack of `steward start` without credentials. */
async function startTogether(durability: string): Promise<{ hub: HubView; webhookPath: string; close(): Promise<void> }> {
  // The environment's STEWARD_* settings reach this Steward too, as they do the intake's, and so
  // does the bench's --durability, as it does every other section's.
  const stack = await startSandboxStack({ handlers: HANDLERS(), env: { ...settingsFromEnv(), STEWARD_DURABILITY: durability } });
  return { hub: localView(stack), webhookPath: stack.config.webhookPath, close: () => stack.close() };
}

async function runRows(place: { hub: HubView; webhookPath: string; close(): Promise<void> }, flows: [Flow, Partial<FlowOptions>][], o: FlowOptions, log: (s: string) => void): Promise<E2eRow[]> {
  const stamps = stampArrivals(place.webhookPath);
  const requests = new RequestLog(place.hub);
  const rows: E2eRow[] = [];
  try {
    for (const [flow, extra] of flows) {
      const row = await flow(await rowContext(place.hub, stamps, requests), { ...o, ...extra });
      log(`  ${row.flow} (hub in ${row.hub})${row.apiDelayMs ? ` (API ${row.apiDelayMs} ms away)` : ""}${row.readAhead ? " (logs read ahead)" : ""}: ${row.answered}/${row.sent} answered, p50 ${row.latency.p50} ms p99 ${row.latency.p99} ms max ${row.latency.max} ms; first API call p50 ${row.firstCall.p50} ms; ${row.callsBeforeAnswer} calls before the answer`);
      rows.push(row);
    }
    return rows;
  } finally {
    stamps.close();
    await place.close();
  }
}

export async function benchEndToEnd(o: { rate: number; count: number; durability: "process" | "power" }, log: (s: string) => void): Promise<E2eResult> {
  const flow = { rate: o.rate, count: o.count };
  const apart = await runRows(
    await startApart(o.durability),
    [
      [rerunFlow, {}],
      [protectionRuleFlow, {}],
      [rerunFlow, { apiDelayMs: API_DELAY_MS }],
      [rerunFlow, { apiDelayMs: API_DELAY_MS, readAhead: true }],
    ],
    flow,
    log,
  );
  const together = await runRows(await startTogether(o.durability), [[rerunFlow, {}], [protectionRuleFlow, {}]], flow, log);
  return { rows: [...apart, ...together] };
}
