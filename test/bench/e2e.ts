// Section 2: end-to-end latency through the sandbox stack. The hub runs workflows at a steady
// rate; Steward's HTTP server stamps when each delivery reached it (arrivals.ts); the hub's own
// request records say when Steward's answer (the re-run request, the protection-rule answer)
// arrived: their `receivedAt`, not `at` (when the hub had answered it), since what the hub does
// with the answer (advancing the run, sending the next webhooks on this same event loop) is not
// Steward's latency.
// Hub and Steward share this process (and its clock), as in `steward start` sandbox mode.
import rerun from "../../handlers/rerun/index.js";
import { createDeploymentsHandler } from "../../handlers/deployments/index.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import { stampArrivals, type ArrivalStamps } from "./arrivals.js";
import { summarise, type Summary } from "./stats.js";
import { settingsFromEnv } from "./servers/bench-steward.mjs";

export interface E2eRow {
  flow: "workflow_run.completed -> re-run" | "deployment_protection_rule -> answer";
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
   * none, the hub answers in-process). The in-process hub shares Steward's event loop, so reads
   * asked together are answered one after another there; with a network between them they wait
   * together, and the number of round trips in a row is what the latency is made of.
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

/** The third row's network to the API: each answer this late (a nearby region's round trip). */
const API_DELAY_MS = 20;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The run id an answer request is about: /repos/o/r/actions/runs/{id}/(rerun-failed-jobs|rerun|deployment_protection_rule). */
function answeredRuns(stack: SandboxStack, suffix: RegExp): Map<number, number> {
  const out = new Map<number, number>();
  for (const r of stack.hub.control.requests()) {
    const m = /\/actions\/runs\/(\d+)\/([a-z_-]+)$/.exec(r.path);
    if (r.method === "POST" && m && suffix.test(m[2]!) && r.status < 300 && !out.has(Number(m[1]))) out.set(Number(m[1]), r.receivedAtHr);
  }
  return out;
}

async function waitAnswered(stack: SandboxStack, suffix: RegExp, runIds: number[], timeoutMs: number): Promise<Map<number, number>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const answered = answeredRuns(stack, suffix);
    if (runIds.every((id) => answered.has(id)) || Date.now() > end) return answered;
    await sleep(50);
  }
}

/** Both ends are stamped on one monotonic clock in this process: latencies kept to a tenth of a millisecond. */
const tenths = (ms: number) => Math.round(ms * 10) / 10;

interface Timings {
  latency: Summary;
  firstCall: Summary;
  callsBeforeAnswer: number;
  answered: number;
}

/** A delivery the hub sent, and when it reached Steward. */
interface Arrival {
  event: string;
  payload: Record<string, any>;
  at: number;
}

/** The hub's deliveries that reached Steward, in the order the hub sent them. */
function arrivals(stack: SandboxStack, stamps: ArrivalStamps): Arrival[] {
  const out: Arrival[] = [];
  for (const d of stack.hub.control.deliveries() as { guid: string; event: string; payload: Record<string, any> }[]) {
    const at = stamps.at(d.guid);
    if (at !== undefined) out.push({ event: d.event, payload: d.payload, at });
  }
  return out;
}

/** The ids of the first attempt's jobs of a run (the deployment flow's runs have none that matter). */
function jobsOf(stack: SandboxStack, runId: number): number[] {
  try {
    return ((stack.hub.domains.actions.describeRun(runId, 1) as { jobs?: { id: number }[] }).jobs ?? []).map((j) => j.id);
  } catch {
    return [];
  }
}

/** Per run: the delivery's arrival at Steward, Steward's first request about the run, its answer. */
function timings(stack: SandboxStack, stamps: ArrivalStamps, answered: Map<number, number>, runOf: (a: Arrival) => number | undefined): Timings {
  const requests = stack.hub.control.requests().filter((r) => r.auth === "installation");
  const total: number[] = [];
  const first: number[] = [];
  const calls: number[] = [];
  const seen = new Set<number>();
  for (const a of arrivals(stack, stamps)) {
    const runId = runOf(a);
    if (runId === undefined || seen.has(runId)) continue;
    seen.add(runId);
    const at = answered.get(runId);
    if (at === undefined) continue;
    total.push(tenths(at - a.at));
    // About the run: the run itself, its jobs list, and its first attempt's job logs.
    const jobs = new Set(jobsOf(stack, runId).map((id) => `/actions/jobs/${id}/`));
    const about = requests.filter((r) => r.receivedAtHr >= a.at && r.receivedAtHr <= at && (r.path.includes(`/actions/runs/${runId}`) || [...jobs].some((j) => r.path.includes(j))));
    if (about[0]) first.push(tenths(about[0].receivedAtHr - a.at));
    calls.push(about.length);
  }
  return { latency: summarise(total), firstCall: summarise(first), callsBeforeAnswer: summarise(calls).p50, answered: total.length };
}

async function rerunFlow(stack: SandboxStack, stamps: ArrivalStamps, o: { rate: number; count: number; apiDelayMs?: number; readAhead?: boolean }): Promise<E2eRow> {
  const { control, domains } = stack.hub;
  const repo = `bench-rerun-${process.pid}-${o.apiDelayMs ?? 0}${o.readAhead ? "-ahead" : ""}`;
  if (o.apiDelayMs) {
    control.setFault("/**", { latencyMs: o.apiDelayMs });
    // The log's storage host is as far away as the API (faults naming it are the only ones it takes).
    control.setFault("/_sandbox/blobs/**", { latencyMs: o.apiDelayMs });
  }
  control.createRepo({ owner: ORG, name: repo, files: { ".github/steward.yml": RERUN_POLICY + (o.readAhead ? "  read_ahead: true\n" : "") } });
  // One warm-up run loads the policy and the installation token, as a running service would have.
  const runIds: number[] = [];
  const start = () => {
    const run = domains.actions.startRun({ owner: ORG, repo, workflow: "CI", jobs: [{ name: "test", steps: ["Set up job", "Test", "Complete job"] }] });
    domains.actions.failJob({ runId: run.id, job: "test", step: "Test", log: "Error: read ECONNRESET" });
    return run.id;
  };
  const warm = start();
  await waitAnswered(stack, /^rerun/, [warm], 30_000);
  for (let i = 0; i < o.count; i++) {
    runIds.push(start());
    await sleep(1000 / o.rate);
  }
  const answered = await waitAnswered(stack, /^rerun/, runIds, 60_000);
  control.clearFaults();
  const wanted = new Set(runIds);
  const t = timings(stack, stamps, answered, (a) =>
    a.event === "workflow_run" && a.payload.action === "completed" && wanted.has(a.payload.workflow_run?.id) ? a.payload.workflow_run.id : undefined,
  );
  return { flow: "workflow_run.completed -> re-run", rate: o.rate, sent: runIds.length, ...t, ...(o.apiDelayMs ? { apiDelayMs: o.apiDelayMs } : {}), ...(o.readAhead ? { readAhead: true } : {}) };
}

async function protectionRuleFlow(stack: SandboxStack, stamps: ArrivalStamps, o: { rate: number; count: number }): Promise<E2eRow> {
  const { control, domains } = stack.hub;
  const repo = `bench-deploy-${process.pid}`;
  control.createRepo({ owner: ORG, name: repo, files: { ".github/steward.yml": DEPLOY_POLICY } });
  domains.deployments.configureEnvironment({ owner: ORG, repo, environment: "production", protectedByApp: true });
  const start = () => domains.actions.startRun({ owner: ORG, repo, workflow: "Deploy", jobs: [{ name: "deploy", environment: "production" }] }).id;
  await waitAnswered(stack, /^deployment_protection_rule$/, [start()], 30_000);
  const runIds: number[] = [];
  for (let i = 0; i < o.count; i++) {
    runIds.push(start());
    await sleep(1000 / o.rate);
  }
  const answered = await waitAnswered(stack, /^deployment_protection_rule$/, runIds, 60_000);
  const wanted = new Set(runIds);
  const runOf = (a: Arrival) => {
    if (a.event !== "deployment_protection_rule") return undefined;
    const m = /\/runs\/(\d+)\//.exec(String(a.payload.deployment_callback_url ?? ""));
    return m && wanted.has(Number(m[1])) ? Number(m[1]) : undefined;
  };
  return { flow: "deployment_protection_rule -> answer", rate: o.rate, sent: runIds.length, ...timings(stack, stamps, answered, runOf) };
}

export async function benchEndToEnd(o: { rate: number; count: number; durability: "process" | "power" }, log: (s: string) => void): Promise<E2eResult> {
  // The environment's STEWARD_* settings reach this Steward too, as they do the intake's, and so
  // does the bench's --durability, as it does every other section's.
  const stack = await startSandboxStack({ handlers: [rerun, createDeploymentsHandler()], env: { ...settingsFromEnv(), STEWARD_DURABILITY: o.durability } });
  const stamps = stampArrivals(stack.config.webhookPath);
  try {
    const rows: E2eRow[] = [];
    const flows = [
      rerunFlow,
      protectionRuleFlow,
      (s: SandboxStack, p: ArrivalStamps) => rerunFlow(s, p, { ...o, apiDelayMs: API_DELAY_MS }),
      (s: SandboxStack, p: ArrivalStamps) => rerunFlow(s, p, { ...o, apiDelayMs: API_DELAY_MS, readAhead: true }),
    ];
    for (const flow of flows) {
      const row = await flow(stack, stamps, o);
      log(`  ${row.flow}${row.apiDelayMs ? ` (API ${row.apiDelayMs} ms away)` : ""}${row.readAhead ? " (logs read ahead)" : ""}: ${row.answered}/${row.sent} answered, p50 ${row.latency.p50} ms p99 ${row.latency.p99} ms max ${row.latency.max} ms; first API call p50 ${row.firstCall.p50} ms; ${row.callsBeforeAnswer} calls before the answer`);
      rows.push(row);
    }
    return { rows };
  } finally {
    stamps.close();
    await stack.close();
  }
}
