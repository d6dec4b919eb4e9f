// Helpers to drive the rerun handler through the whole sandbox stack: the hub, Steward's
// intake, queue and engine, with real deliveries and real API calls.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Steward } from "../../../src/app.js";
import rerun from "../../../handlers/rerun/index.js";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import type { Run } from "@steward/sandbox-hub";
import { vi } from "vitest";
import { main } from "../../../src/cli/main.js";

export const ORG = "acme";

export function stewardOf(stack: SandboxStack): Steward {
  return stack.steward as unknown as Steward;
}

/** Wait until the hub has nothing to deliver and Steward has nothing queued (a re-run starts new work). */
export async function settle(stack: SandboxStack): Promise<void> {
  const { control, domains } = stack.hub;
  for (let round = 0; round < 50; round++) {
    const before = control.deliveries().length;
    await domains.idle();
    await control.settled();
    await stewardOf(stack).engine.idle();
    await domains.idle();
    await control.settled();
    if (control.deliveries().length === before) return;
  }
  throw new Error("the sandbox did not settle");
}

let repoCounter = 0;
/** A fresh repository in the demo organisation with `policy` as its .github/steward.yml. */
export function newRepo(stack: SandboxStack, policy: string | undefined): { repo: string; sha: () => string } {
  const repo = `rerun-${process.pid}-${++repoCounter}`;
  stack.hub.control.createRepo({
    owner: ORG,
    name: repo,
    files: policy === undefined ? {} : { ".github/steward.yml": policy },
  });
  const sha = () =>
    stack.hub.control.pushFiles({ owner: ORG, repo, files: { "src/touch.txt": `${Math.random()}\n` } }).sha;
  return { repo, sha };
}

export const JOBS = [
  { name: "lint", steps: ["Set up job", "Lint", "Complete job"] },
  { name: "integration-db", steps: ["Set up job", "Install deps", "Test", "Complete job"] },
];

/** Start CI on the tip of `branch` and let lint pass. */
export function startCi(
  stack: SandboxStack,
  repo: string,
  o: { sha?: string; branch?: string; event?: string; pullRequests?: Record<string, unknown>[] } = {},
): Run {
  const { actions } = stack.hub.domains;
  const run = actions.startRun({ owner: ORG, repo, workflow: "CI", jobs: JOBS, ...o });
  actions.completeJob({ runId: run.id, job: "lint" });
  return run;
}

/** The hub's requests made on one repository by Steward (installation or none: the log host). */
export function requestsFor(stack: SandboxStack, repo: string) {
  return stack.hub.control.requests().filter((r) => r.path.includes(`/repos/${ORG}/${repo}/`));
}

export function rerunPosts(stack: SandboxStack, repo: string): string[] {
  return requestsFor(stack, repo)
    .filter((r) => r.method === "POST" && /\/actions\/runs\/\d+\/rerun/.test(r.path))
    .map((r) => `${r.path.split("/").pop()} ${r.status}`);
}

/**
 * Every re-run request Steward made on the repository, with its status: `rerun-failed-jobs 201`,
 * or for a per-job re-run `job NAME 201` (`run ID job NAME 201` with `withRun`).
 */
export function rerunRequestLog(stack: SandboxStack, repo: string, withRun = false): string[] {
  const { actions } = stack.hub.domains;
  return requestsFor(stack, repo)
    .filter((r) => r.method === "POST" && /\/rerun(-failed-jobs)?$/.test(r.path))
    .map((r) => {
      const m = /\/actions\/jobs\/(\d+)\/rerun$/.exec(r.path);
      const job = m ? actions.jobs.get(Number(m[1])) : undefined;
      if (!job) return `${r.path.split("/").pop()} ${r.status}`;
      return `${withRun ? `run ${job.runId} ` : ""}job ${job.name} ${r.status}`;
    });
}

export function rerunChecks(stack: SandboxStack, headSha: string) {
  return [...stack.hub.domains.checks.runs.values()].filter(
    (c) => c.name === "steward/rerun" && c.head_sha === headSha && !c.deleted,
  );
}

/**
 * A webhook receiver that only records: while the hub delivers here, Steward sees nothing, so a
 * test can stage a race (a person re-running first) and then hand a recorded delivery to Steward.
 */
export async function holdDeliveries(stack: SandboxStack): Promise<{ release(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200).end());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  stack.hub.control.setWebhookUrl(`http://127.0.0.1:${(server.address() as AddressInfo).port}/held`);
  return {
    async release() {
      // Everything staged so far goes to the holding receiver, not to Steward.
      await stack.hub.domains.idle();
      await stack.hub.control.settled();
      stack.hub.control.setWebhookUrl(stack.webhookUrl);
      await new Promise((r) => server.close(r));
    },
  };
}

/** Ask the hub to redeliver a recorded delivery (the app's own API, as GitHub's UI does). */
export async function redeliver(stack: SandboxStack, deliveryId: number): Promise<void> {
  const app = await stewardOf(stack).octokits.appOctokit();
  await app.request("POST /app/hook/deliveries/{delivery_id}/attempts", { delivery_id: deliveryId });
}

export function completedDeliveries(stack: SandboxStack, runId: number) {
  return stack.hub.control
    .deliveries()
    .filter(
      (d) =>
        d.event === "workflow_run" &&
        d.action === "completed" &&
        (d.payload.workflow_run as { id: number }).id === runId,
    );
}

export const NETWORK_RULES = `
  rules:
    - jobs: ["integration-*"]
      log: ["ECONNRESET", "/lost communication with the server/i"]
    - runner_lost: true
`;

/** A steward.yml enabling re-runs with no delay, `extra` keys, and `rules`. */
export function rerunPolicyYaml(extra: string, rules = NETWORK_RULES): string {
  return `rerun:\n  enabled: true\n  delay: 0s\n${extra}${rules}`;
}

/** The rerun handler's outcomes on a run's `completed` deliveries, by attempt. */
export async function outcomesOf(
  stack: SandboxStack,
  runId: number,
): Promise<{ attempt: number; status: string; detail: string }[]> {
  const out: { attempt: number; status: string; detail: string }[] = [];
  const seen = new Set<string>();
  for (const d of completedDeliveries(stack, runId)) {
    if (seen.has(d.guid)) continue; // a redelivery keeps its id: Steward stored it once
    seen.add(d.guid);
    const stored = await stewardOf(stack).store.deliveries.getDelivery(d.guid);
    for (const o of stored?.outcomes ?? []) {
      if (o.handler === "rerun")
        out.push({
          attempt: (d.payload.workflow_run as { run_attempt: number }).run_attempt,
          status: o.status,
          detail: o.detail ?? "",
        });
    }
  }
  return out;
}

/** The sandbox hub and Steward running only the rerun handler. */
export function startRerunStack(): Promise<SandboxStack> {
  return startSandboxStack({ handlers: [rerun] });
}

/**
 * Stage a race: hold Steward's next re-run request at the hub (added latency) and, once Steward has
 * read the run (its last look before re-running), let `act` change the run first, as a person would.
 */
export async function beforeRerunLands(
  stack: SandboxStack,
  repo: string,
  runId: number,
  act: () => void | Promise<void>,
): Promise<void> {
  const { control } = stack.hub;
  control.setFault(`POST /repos/${ORG}/${repo}/actions/runs/${runId}/rerun*`, { latencyMs: 1500, times: 1 });
  const readRun = () =>
    control.requests().some((r) => r.method === "GET" && r.path === `/repos/${ORG}/${repo}/actions/runs/${runId}`);
  for (let i = 0; i < 2000 && !readRun(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!readRun()) throw new Error(`Steward never read run ${runId}`);
  await act();
}

/** Run a `steward` command on the stack's data directory; stdout and stderr together. */
export async function stewardCli(stack: SandboxStack, ...argv: string[]): Promise<{ code: number; out: string }> {
  let out = "";
  vi.spyOn(process.stdout, "write").mockImplementation((chunk) => ((out += String(chunk)), true));
  vi.spyOn(process.stderr, "write").mockImplementation((chunk) => ((out += String(chunk)), true));
  const saved = process.env.STEWARD_DATA_DIR;
  process.env.STEWARD_DATA_DIR = stack.config.dataDir;
  try {
    return { code: await main(argv), out };
  } finally {
    if (saved === undefined) delete process.env.STEWARD_DATA_DIR;
    else process.env.STEWARD_DATA_DIR = saved;
    vi.restoreAllMocks();
  }
}
