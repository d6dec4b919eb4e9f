// The load model's busiest hour replayed against the sandbox hub, once with Steward's built-in
// handlers and once with the usual Probot app, each on a fresh hub with the same model. What is
// spent is counted from the hub's record of requests (it sees every call); which delivery and
// handler spent it, from each app's own per-delivery record of its calls.
//
// Compressed time: the sample of R repositories replays the hour in 3600/C seconds, C = 10,000/R,
// so requests reach the hub at the rate the whole organisation's would on GitHub: the per-minute
// secondary limits and the concurrency limit apply as GitHub documents them. The hourly budgets are
// scaled instead: the sample's hour is measured against 12,500/C, i.e. its count times C against
// 12,500. The primary limit is measured, not enforced (an exhausted budget would hide the demand
// past it); the 500-an-hour creation limit likewise (the hub counts every POST as creating).
import { createHmac, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Probot, type Context } from "probot";
import { createSteward } from "../../src/app.js";
import { loadConfig } from "../../src/config/env.js";
import { storedApiCalls } from "../../src/engine/api-calls.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { sandboxStewardEnv } from "../../src/sandbox/stack.js";
import { percentile } from "./load.js";
import {
  BUSIEST_HOUR,
  ORG_REPOS,
  RATES,
  generateModel,
  hourOf,
  summarise,
  type Model,
  type ModelEvent,
  type ModelRepo,
  type RunPlan,
} from "./model.js";

const ORG = "acme";
export const LIMIT = 12_500;
/** Seconds after the last event that late decisions may still arrive. */
const DRAIN_SECONDS = 60;

const REPO_POLICY = (r: ModelRepo) =>
  [
    "rerun:\n  enabled: true\n  delay: 0s\n  rules:\n    - log: [ECONNRESET]\n",
    r.deploys
      ? "deployments:\n  environments:\n    production:\n      branches: [main]\n      checks: [{ name: test, app: github-actions }]\n"
      : "",
  ].join("");
const ADMIN_POLICY =
  "deployments:\n  environments: {}\n  by_property:\n    - property: tier\n      values: [critical]\n      environments:\n        production:\n          branches: [main]\n";
const SECRETS_DOC = (regions: number) =>
  `variables:\n  REGION: { value: eu-west-${regions}, repositories: ["svc-*"] }\n`;

export interface KindRow {
  kind: string;
  deliveries: number;
  /** Requests counting against the primary limit, attributed by the app to deliveries of this kind. */
  requests: number;
  writes: number;
}

export interface HandlerRow {
  handler: string;
  requests: number;
  writes: number;
  /** The biggest routes: "GET /repos/{owner}/{repo}/contents/{path} 812". */
  top: string[];
}

export interface ReplayResult {
  app: "Steward" | "Probot";
  deliveries: number;
  /** Requests the hub counted against the installation's primary limit (304s and refusals cost nothing). */
  requests: number;
  writes: number;
  /** Of `requests`, the ones the app tied to a delivery. */
  attributed: number;
  secondary: number;
  /** Points (a read 1, a write 5) of the busiest wall-clock minute: GitHub refuses past 900. */
  peakMinutePoints: number;
  byKind: KindRow[];
  byHandler: HandlerRow[];
  /** The hub's routes by requests, whoever made them. */
  routes: [string, number][];
  decisions: {
    flow: string;
    expected: number;
    acted: number;
    declined: number;
    lost: number;
    late: number;
    p50: number;
    p99: number;
    max: number;
  }[];
  wallSeconds: number;
  /** CPU seconds of this process (the app and the hub together) over the replay. */
  cpuSeconds: number;
  replayErrors: number;
}

type Stamp = Map<string, number>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isWrite = (method: string) => !["GET", "HEAD", "OPTIONS"].includes(method);

const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as {
  name: string;
  examples: Record<string, unknown>[];
}[];
/** A real payload of `event`/`action` from @octokit/webhooks-examples, its repository and installation made the hub's. */
function examplePayload(hub: HubHandle, event: string, action: string, repoName: string): Record<string, unknown> {
  const example = examples.find((g) => g.name === event)!.examples.find((e) => e.action === action)!;
  const repo = hub.control.repo(ORG, repoName)!;
  const installation = hub.control.installation(ORG)!;
  const payload = structuredClone(example) as Record<string, any>;
  const repoJson = {
    ...payload.repository,
    id: repo.id,
    node_id: repo.node_id,
    name: repo.name,
    full_name: `${ORG}/${repo.name}`,
    private: repo.private,
    default_branch: repo.default_branch,
    owner: { ...(payload.repository?.owner ?? {}), login: ORG, type: "Organization" },
  };
  if (event === "installation_repositories") {
    payload[`repositories_${action}`] = [
      { id: repo.id, node_id: repo.node_id, name: repo.name, full_name: repoJson.full_name, private: repo.private },
    ];
    payload[`repositories_${action === "added" ? "removed" : "added"}`] = [];
    payload.installation = {
      ...payload.installation,
      id: installation.id,
      account: { login: ORG, type: "Organization" },
    };
  } else {
    payload.repository = repoJson;
    payload.installation = { id: installation.id, node_id: payload.installation?.node_id ?? "" };
  }
  payload.organization = { ...(payload.organization ?? {}), login: ORG };
  return payload;
}

/** Deliver as GitHub does (signed), for the events the hub does not send itself. */
async function deliverExample(hub: HubHandle, url: string, event: string, payload: Record<string, unknown>) {
  const body = JSON.stringify(payload);
  await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "X-GitHub-Event": event,
      "X-GitHub-Delivery": randomUUID(),
      "X-Hub-Signature-256": `sha256=${createHmac("sha256", hub.env.WEBHOOK_SECRET).update(body).digest("hex")}`,
    },
    body,
  });
}

/** The hub's world before the hour: repositories, policies, environments, properties, open pull requests. */
function seedWorld(hub: HubHandle, model: Model, events: ModelEvent[]): Map<string, number> {
  const c = hub.control;
  for (const r of model.repos) {
    c.createRepo({
      owner: ORG,
      name: r.name,
      private: r.private,
      files: r.policy ? { ".github/steward.yml": REPO_POLICY(r) } : {},
    });
    if (r.deploys)
      hub.domains.deployments.configureEnvironment({
        owner: ORG,
        repo: r.name,
        environment: "production",
        protectedByApp: true,
      });
    if (r.critical) hub.domains.properties.setValues(ORG, r.name, { tier: "critical" });
  }
  c.pushFiles({
    owner: ORG,
    repo: ".github",
    files: { ".github/steward.yml": ADMIN_POLICY, ".github/steward/secrets.yml": SECRETS_DOC(1) },
  });
  // Pull requests the hour synchronises or merges but did not open.
  const prs = new Map<string, number>();
  for (const e of events)
    if ((e.kind === "pull_request.synchronize" || e.kind === "merge") && !prs.has(`${e.repo}#${e.pr}`))
      if (!events.some((o) => o.kind === "pull_request.opened" && o.repo === e.repo && o.pr === e.pr && o.at <= e.at))
        prs.set(`${e.repo}#${e.pr}`, openPr(hub, model.repos[e.repo]!.name, e.pr).number);
  return prs;
}

const openPr = (hub: HubHandle, repo: string, pr: number) =>
  hub.control.openPullRequest({ owner: ORG, repo, head: `pr-${pr}`, files: { [`src/change-${pr}.txt`]: `${pr}\n` } });

const STEPS = ["Set up job", "Test", "Complete job"];
const JOBS: Record<RunPlan["workflow"], { name: string; steps?: string[]; environment?: string }[]> = {
  CI: ["build", "test", "integration"].slice(0, RATES.ciJobs).map((name) => ({ name, steps: STEPS })),
  Lint: [{ name: "lint", steps: STEPS }],
  Deploy: [{ name: "deploy", environment: "production" }],
};

/**
 * Replays the hour: each event at its time divided by `model.scale`, each run started and ended on
 * the same compressed clock. Returns the expected decisions (run ids).
 */
async function replayEvents(
  hub: HubHandle,
  model: Model,
  events: ModelEvent[],
  prs: Map<string, number>,
  webhookUrl: string,
  onError: (error?: unknown) => void,
): Promise<{ reruns: Set<number>; answers: Set<number> }> {
  const c = hub.control;
  const actions = hub.domains.actions;
  const reruns = new Set<number>();
  const answers = new Set<number>();
  const timers: Promise<void>[] = [];
  const start = performance.now();
  const at = (modelMs: number, fn: () => unknown) =>
    timers.push(
      sleep(Math.max(0, start + modelMs / model.scale - performance.now())).then(async () => {
        try {
          await fn();
        } catch (error) {
          onError(error);
        }
      }),
    );
  // The tip of each branch, as the replay moved it: a run whose branch moved on before it failed is
  // superseded, and Steward does not re-run it (docs/policy.md), so it is not an expected re-run.
  const tips = new Map<string, string>();
  const startRuns = (t: number, repo: ModelRepo, sha: string, branch: string, event: string, runs: RunPlan[]) => {
    tips.set(`${repo.name} ${branch}`, sha);
    for (const plan of runs)
      at(t + plan.startMin * 60_000, () => {
        const run = actions.startRun({
          owner: ORG,
          repo: repo.name,
          workflow: plan.workflow,
          branch,
          sha,
          event,
          jobs: JOBS[plan.workflow],
        });
        if (plan.workflow === "Deploy") {
          if (repo.policy || repo.critical) answers.add(run.id);
          return; // it waits for its answer; the model ends it no further
        }
        at(t + (plan.startMin + plan.minutes) * 60_000, () => {
          if (plan.outcome === "transient") {
            if (repo.policy && tips.get(`${repo.name} ${branch}`) === sha) reruns.add(run.id);
            actions.scriptAttempt(run.id, 2, "success");
            actions.failJob({
              runId: run.id,
              job: JOBS[plan.workflow].at(-1)!.name,
              step: "Test",
              log: "Error: read ECONNRESET",
            });
          } else if (plan.outcome === "real")
            actions.failJob({
              runId: run.id,
              job: JOBS[plan.workflow][0]!.name,
              step: "Test",
              log: "AssertionError: expected 1 to equal 2",
            });
          actions.completeRun(run.id);
        });
      });
  };
  let renamed = 0;
  for (const e of events) {
    const repo = model.repos[e.repo]!;
    at(e.at, async () => {
      switch (e.kind) {
        case "pull_request.opened": {
          const pr = openPr(hub, repo.name, e.pr);
          prs.set(`${e.repo}#${e.pr}`, pr.number);
          return startRuns(e.at, repo, pr.head_sha, `pr-${e.pr}`, "pull_request", e.runs);
        }
        case "pull_request.synchronize": {
          const number = prs.get(`${e.repo}#${e.pr}`);
          if (number === undefined) return onError(new Error(`no pull request ${e.repo}#${e.pr}`));
          const { sha } = c.pushToPullRequest({
            owner: ORG,
            repo: repo.name,
            number,
            files: { [`src/change-${e.pr}.txt`]: `${e.at}\n` },
          });
          return startRuns(e.at, repo, sha, `pr-${e.pr}`, "pull_request", e.runs);
        }
        case "merge": {
          const number = prs.get(`${e.repo}#${e.pr}`);
          if (number === undefined) return onError(new Error(`no pull request ${e.repo}#${e.pr}`));
          if (e.queue) {
            const group = c.enqueuePullRequest({ owner: ORG, repo: repo.name, number });
            const ci = e.runs.filter((r) => r.workflow !== "Deploy");
            startRuns(e.at, repo, group.headSha, group.headRef, "merge_group", ci);
            const done = Math.max(...ci.map((r) => r.startMin + r.minutes));
            at(e.at + done * 60_000, () => c.destroyMergeGroup(group, "merged"));
            const deploy = e.runs.filter((r) => r.workflow === "Deploy").map((r) => ({ ...r, startMin: 0 }));
            return at(e.at + done * 60_000, () =>
              startRuns(e.at + done * 60_000, repo, group.headSha, "main", "push", deploy),
            );
          }
          const { sha } = c.mergePullRequest({ owner: ORG, repo: repo.name, number });
          return startRuns(e.at, repo, sha, "main", "push", e.runs);
        }
        case "push": {
          const { sha } = c.pushFiles({
            owner: ORG,
            repo: repo.name,
            branch: e.branch,
            files: { "src/work.txt": `${e.at}\n` },
          });
          return startRuns(e.at, repo, sha, e.branch, "push", e.runs);
        }
        case "repository.created": {
          const name = `new-${e.at}`;
          c.createRepo({ owner: ORG, name });
          return deliverExample(hub, webhookUrl, "repository", examplePayload(hub, "repository", "created", name));
        }
        case "repository.visibility":
          c.setRepoVisibility(ORG, repo.name, repo.private ? "public" : "private");
          repo.private = !repo.private;
          return;
        case "repository.renamed": {
          // Renamed in the payload only: the model's later events still name the repository as before.
          const payload = examplePayload(hub, "repository", "renamed", repo.name);
          payload.changes = { repository: { name: { from: `${repo.name}-old-${renamed++}` } } };
          return deliverExample(hub, webhookUrl, "repository", payload);
        }
        case "installation_repositories":
          return deliverExample(
            hub,
            webhookUrl,
            "installation_repositories",
            examplePayload(hub, "installation_repositories", "added", repo.name),
          );
        case "admin-policy":
          c.pushFiles({ owner: ORG, repo: ".github", files: { ".github/steward/secrets.yml": SECRETS_DOC(2) } });
          return;
      }
    });
  }
  // Timers add timers: wait until none is left.
  for (let seen = 0; seen < timers.length;) {
    const upTo = timers.length;
    await Promise.all(timers.slice(seen, upTo));
    seen = upTo;
  }
  return { reruns, answers };
}

type ProbotCall = { kind: string; method: string; route: string; status: number };

/** The usual Probot app doing the same acting work: its configuration read on every event, nothing remembered, nothing coalesced. */
function probotApp(calls: Map<string, ProbotCall[]>) {
  const waiting = new Map<string, { env: string; callback: string; runId: number; repo: string }[]>();
  return (app: Probot) => {
    // Probot hands its handlers a Context (its types name the bare event).
    app.onAny(async (event) => {
      const context = event as unknown as Context;
      const payload = context.payload as Record<string, any>;
      if (!payload.repository || !payload.installation) return;
      const kind = `${context.name}${payload.action ? `.${payload.action}` : ""}`;
      const mine: ProbotCall[] = [];
      calls.set(context.id, mine);
      context.octokit.hook.wrap("request", async (request, options) => {
        let status = 0;
        try {
          const response = await request(options);
          status = response.status;
          return response;
        } catch (error) {
          status = (error as { status?: number }).status ?? 0;
          throw error;
        } finally {
          mine.push({ kind, method: options.method, route: options.url, status });
        }
      });
      const config = (await context.config("steward.yml")) as Record<string, any> | null;
      const owner = payload.repository.owner.login as string;
      const repo = payload.repository.name as string;
      const checksPass = async (sha: string, env: string) => {
        const wanted = config?.deployments?.environments?.[env]?.checks ?? [];
        if (!wanted.length) return "yes";
        const { data } = await context.octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
          owner,
          repo,
          ref: sha,
        });
        const runs = data.check_runs.filter((r: any) => wanted.some((w: any) => (w.name ?? w) === r.name));
        if (runs.some((r: any) => r.status !== "completed")) return "wait";
        return runs.length && runs.every((r: any) => r.conclusion === "success") ? "yes" : runs.length ? "no" : "wait";
      };
      const answer = (callback: string, state: string) =>
        context.octokit.request(`POST ${new URL(callback).pathname}`, {
          environment_name: "production",
          state,
          comment: state,
        });
      if (
        context.name === "workflow_run" &&
        payload.action === "completed" &&
        payload.workflow_run.conclusion === "failure"
      ) {
        if (!config?.rerun?.enabled) return;
        const id = payload.workflow_run.id as number;
        const { data } = await context.octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", {
          owner,
          repo,
          run_id: id,
        });
        const failed = data.jobs.filter((j: any) => j.conclusion === "failure");
        let transient = failed.length > 0;
        for (const job of failed) {
          const log = await context.octokit.request("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", {
            owner,
            repo,
            job_id: job.id,
          });
          transient &&= String(log.data).includes("ECONNRESET");
        }
        if (transient && payload.workflow_run.run_attempt < 2)
          await context.octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs", {
            owner,
            repo,
            run_id: id,
          });
        await context.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
          owner,
          repo,
          name: "steward/rerun",
          head_sha: payload.workflow_run.head_sha,
          status: "completed",
          conclusion: "neutral",
          output: { title: transient ? "Re-run" : "Not re-run", summary: "" },
        });
      } else if (context.name === "deployment_protection_rule") {
        const env = payload.environment as string;
        if (!config?.deployments?.environments?.[env]) return;
        const sha = payload.deployment.sha as string;
        const pass = await checksPass(sha, env);
        if (pass === "wait") {
          const list = waiting.get(sha) ?? [];
          list.push({ env, callback: payload.deployment_callback_url, runId: 0, repo });
          waiting.set(sha, list);
        } else await answer(payload.deployment_callback_url, pass === "yes" ? "approved" : "rejected");
      } else if (context.name === "check_run" && payload.action === "completed") {
        const sha = payload.check_run.head_sha as string;
        for (const w of waiting.get(sha) ?? []) {
          const pass = await checksPass(sha, w.env);
          if (pass === "wait") continue;
          waiting.set(
            sha,
            (waiting.get(sha) ?? []).filter((x) => x !== w),
          );
          await answer(w.callback, pass === "yes" ? "approved" : "rejected");
        }
      } else if (context.name === "pull_request" && ["opened", "synchronize"].includes(payload.action)) {
        const { data } = await context.octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
          owner,
          repo,
          pull_number: payload.number,
        });
        if (data.some((f: any) => f.filename === ".github/steward.yml"))
          await context.octokit.request("POST /repos/{owner}/{repo}/check-runs", {
            owner,
            repo,
            name: "steward/config",
            head_sha: payload.pull_request.head.sha,
            status: "completed",
            conclusion: "success",
          });
      } else if (
        context.name === "push" &&
        repo === ".github" &&
        payload.commits?.some((c: any) => c.modified?.includes(".github/steward/secrets.yml"))
      ) {
        // The sync: every repository the document names gets its variable written.
        const repos = await context.octokit.paginate("GET /orgs/{org}/repos", { org: owner, per_page: 100 });
        for (const r of repos.filter((x: any) => x.name.startsWith("svc-")))
          await context.octokit
            .request("PATCH /repos/{owner}/{repo}/actions/variables/{name}", {
              owner,
              repo: r.name,
              name: "REGION",
              value: "eu-west-2",
            })
            .catch(() =>
              context.octokit.request("POST /repos/{owner}/{repo}/actions/variables", {
                owner,
                repo: r.name,
                name: "REGION",
                value: "eu-west-2",
              }),
            );
      }
    });
  };
}

async function startProbot(hub: HubHandle, calls: Map<string, ProbotCall[]>) {
  const probot = new Probot({
    appId: Number(hub.env.APP_ID),
    privateKey: readFileSync(hub.env.PRIVATE_KEY_PATH, "utf8"),
    secret: hub.env.WEBHOOK_SECRET,
    baseUrl: hub.env.GITHUB_API_URL,
    logLevel: "fatal",
  });
  await probot.load(probotApp(calls));
  // Answered at once and handled after, as GitHub's concurrent deliveries would find it: the hub
  // sends an installation's deliveries one after the other, each waiting for its answer, so an app
  // answering after its handler would be held to one delivery at a time.
  let inFlight = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      res.writeHead(202).end();
      inFlight++;
      void probot.webhooks
        .verifyAndReceive({
          id: String(req.headers["x-github-delivery"]),
          name: String(req.headers["x-github-event"]) as never,
          payload: Buffer.concat(chunks).toString("utf8"),
          signature: String(req.headers["x-hub-signature-256"]),
        })
        .catch(() => {})
        .finally(() => inFlight--);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/api/github/webhooks`,
    idle: async () => {
      for (const deadline = Date.now() + DRAIN_SECONDS * 1000; inFlight > 0 && Date.now() < deadline;) await sleep(200);
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

export async function replayHour(
  model: Model,
  app: "Steward" | "Probot",
  log: (line: string) => void,
): Promise<ReplayResult> {
  const events = hourOf(model, BUSIEST_HOUR);
  const hub = await createHub({ rateLimit: 1_000_000_000 });
  // Steward runs under GitHub's secondary limits. The Probot app's demand passes 900 points a minute,
  // so they would refuse it and hide part of its cost, as an enforced primary limit would: it is
  // counted unrefused (the report gives its peak minute).
  if (app === "Steward") hub.control.enforceDocumentedLimits({ creatingPerHour: 1_000_000 });
  const prs = seedWorld(hub, model, events);
  const dataDir = mkdtempSync(join(tmpdir(), "steward-replay-"));
  const probotCalls = new Map<string, ProbotCall[]>();
  const server =
    app === "Steward"
      ? await createSteward({
          // Production pacing: writes a second apart per installation (the compressed clock keeps the org's real rates).
          config: loadConfig(
            sandboxStewardEnv(hub.env, hub.control.userToken("release-manager"), {
              dataDir,
              env: { LOG_LEVEL: "fatal" },
            }),
          ),
        })
      : undefined;
  const probot = app === "Probot" ? await startProbot(hub, probotCalls) : undefined;
  const url = server ? `${server.url.replace(/\/$/, "")}/api/github/webhooks` : probot!.url;
  // Stamps taken as the hub sends: failed runs (the re-run's start) and protection rules and the last check completion of a commit (the answer's).
  const failedAt: Stamp = new Map();
  const ruleAt: Stamp = new Map();
  const ruleSha = new Map<number, string>();
  const checkDoneAt: Stamp = new Map();
  const fetchBefore = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    if (String(input) === url && typeof init?.body === "string") {
      const now = performance.now();
      const event = (init.headers as Record<string, string>)["X-GitHub-Event"];
      const body = JSON.parse(init.body) as Record<string, any>;
      if (event === "workflow_run" && body.action === "completed" && body.workflow_run.conclusion === "failure")
        failedAt.set(String(body.workflow_run.id), now);
      const rule = /\/runs\/(\d+)\//.exec(body.deployment_callback_url ?? "");
      if (event === "deployment_protection_rule" && rule) {
        ruleAt.set(rule[1]!, now);
        ruleSha.set(Number(rule[1]), body.deployment.sha);
      }
      if (event === "check_run" && body.action === "completed") checkDoneAt.set(body.check_run.head_sha, now);
    }
    return fetchBefore(input, init);
  };
  let replayErrors = 0;
  try {
    hub.control.setWebhookUrl(url);
    // A running service: start-up work done before the hour begins.
    await settle(hub);
    await server?.engine.idle();
    const firstRequest = hub.control.requests().length;
    const cpuBefore = process.cpuUsage();
    const began = performance.now();
    const firstDelivery = hub.control.deliveries().length;
    const secondaryBefore = secondaryAnswers(hub);
    log(
      `${app}: replaying ${events.length} events of hour ${BUSIEST_HOUR}:00 for ${model.repos.length} repositories in ${(3600 / model.scale).toFixed(0)} s`,
    );
    const expected = await replayEvents(hub, model, events, prs, url, (error) => {
      if (replayErrors++ < 3) log(`${app}: replay step failed: ${String(error)}`);
    });
    // Late decisions: until every expected one is made or the drain time has passed.
    const acting = () =>
      hub.control
        .requests()
        .slice(firstRequest)
        .filter(
          (r) =>
            r.method === "POST" &&
            r.status < 300 &&
            /\/actions\/runs\/\d+\/(rerun|rerun-failed-jobs|deployment_protection_rule)$/.test(r.path),
        );
    for (const deadline = performance.now() + DRAIN_SECONDS * 1000; performance.now() < deadline; await sleep(500)) {
      const done = new Set(acting().map((r) => Number(/runs\/(\d+)/.exec(r.path)![1])));
      if ([...expected.reruns, ...expected.answers].every((id) => done.has(id))) break;
    }
    await settle(hub);
    await (server ? server.engine.idle() : probot!.idle());
    await settle(hub);
    const wallSeconds = (performance.now() - began) / 1000;
    const cpu = process.cpuUsage(cpuBefore);

    const requests = hub.control.requests().slice(firstRequest);
    const counted = requests.filter((r) => r.auth === "installation" && r.status !== 304 && !refused(r.status));
    const secondary = secondaryAnswers(hub) - secondaryBefore;
    const routes = new Map<string, number>();
    for (const r of counted)
      routes.set(`${r.method} ${r.route ?? r.path}`, (routes.get(`${r.method} ${r.route ?? r.path}`) ?? 0) + 1);
    const deliveries = hub.control.deliveries().slice(firstDelivery);

    // Attribution: the app's record of the calls each delivery made.
    const byKind = new Map<string, KindRow>();
    const byHandler = new Map<string, HandlerRow & { routes: Map<string, number> }>();
    const kindRow = (kind: string) =>
      byKind.get(kind) ?? byKind.set(kind, { kind, deliveries: 0, requests: 0, writes: 0 }).get(kind)!;
    const attribute = (kind: string, handler: string, method: string, route: string, status: number) => {
      // What the hub does not count against the installation: 304s, refusals, the app's own token requests.
      if (status === 304 || status === 0 || refused(status) || route.endsWith("/access_tokens")) return;
      const k = kindRow(kind);
      const h =
        byHandler.get(handler) ??
        byHandler.set(handler, { handler, requests: 0, writes: 0, top: [], routes: new Map() }).get(handler)!;
      k.requests++;
      h.requests++;
      if (isWrite(method)) (k.writes++, h.writes++);
      const key = `${method} ${route}`;
      h.routes.set(key, (h.routes.get(key) ?? 0) + 1);
    };
    for (const d of deliveries) {
      const kind = `${d.event}${d.action ? `.${d.action}` : ""}`;
      kindRow(kind).deliveries++;
      if (server)
        for (const run of await storedApiCalls(server.store.kv, d.guid))
          for (const call of run.calls) attribute(kind, run.handler, call.method, call.route, call.status);
      else
        for (const call of probotCalls.get(d.guid) ?? [])
          attribute(kind, "probot app", call.method, call.route, call.status);
    }
    const attributed = [...byHandler.values()].reduce((n, h) => n + h.requests, 0);
    const latencies = (flow: string, ids: Set<number>, from: (id: number) => number | undefined) => {
      const acted = new Map(acting().map((r) => [Number(/runs\/(\d+)/.exec(r.path)![1]), r.receivedAtHr]));
      const ms = [...ids].flatMap((id) => {
        const a = acted.get(id);
        const f = from(id);
        return a !== undefined && f !== undefined ? [Math.max(0, a - f)] : [];
      });
      // A re-run declined (superseded, its merge group gone) is a decision, reported in steward/rerun.
      const reported = (id: number) => {
        const run = hub.domains.actions.runs.get(id);
        return [...hub.domains.checks.runs.values()].some(
          (c) => c.name === "steward/rerun" && c.head_sha === run?.head_sha,
        );
      };
      const declined = [...ids].filter((id) => !acted.has(id) && reported(id)).length;
      const lost = [...ids].filter((id) => !acted.has(id) && !reported(id)).length;
      return {
        flow,
        expected: ids.size,
        acted: ids.size - lost - declined,
        declined,
        lost,
        late: ms.filter((m) => m > 60_000).length,
        p50: percentile(ms, 50),
        p99: percentile(ms, 99),
        max: ms.length ? Math.max(...ms) : 0,
      };
    };
    return {
      app,
      deliveries: deliveries.length,
      requests: counted.length,
      writes: counted.filter((r) => isWrite(r.method)).length,
      attributed,
      secondary,
      peakMinutePoints: peakMinute(counted),
      byKind: [...byKind.values()].sort((a, b) => b.requests - a.requests || b.deliveries - a.deliveries),
      byHandler: [...byHandler.values()]
        .sort((a, b) => b.requests - a.requests)
        .map(({ routes: r, ...h }) => ({
          ...h,
          top: [...r]
            .sort((a, b) => b[1] - a[1])
            .slice(0, 4)
            .map(([k, n]) => `${k} ${n}`),
        })),
      routes: [...routes].sort((a, b) => b[1] - a[1]),
      decisions: [
        latencies("re-run of a transient failure (failed run -> re-run request)", expected.reruns, (id) =>
          failedAt.get(String(id)),
        ),
        latencies(
          "deployment answer (protection rule, or the last check it waits on -> answer)",
          expected.answers,
          (id) => {
            const rule = ruleAt.get(String(id));
            const checks = checkDoneAt.get(ruleSha.get(id) ?? "");
            return rule === undefined ? undefined : Math.max(rule, checks ?? 0);
          },
        ),
      ],
      wallSeconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      replayErrors,
    };
  } finally {
    globalThis.fetch = fetchBefore;
    hub.control.setWebhookUrl(undefined);
    await server?.close();
    await probot?.close();
    await hub.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function peakMinute(requests: { method: string; receivedAt: number }[]): number {
  let peak = 0;
  for (let i = 0, j = 0, points = 0; j < requests.length; j++) {
    points += isWrite(requests[j]!.method) ? 5 : 1;
    while (requests[i]!.receivedAt <= requests[j]!.receivedAt - 60_000)
      points -= isWrite(requests[i++]!.method) ? 5 : 1;
    peak = Math.max(peak, points);
  }
  return peak;
}

/** Every delivery the hub has to send so far sent and answered (runs queue theirs first). */
async function settle(hub: HubHandle) {
  await hub.domains.actions.idle();
  await hub.control.settled();
}

/** The hub's effects log keeps its newest 50,000 entries: far more than an hour's refusals. */
const secondaryAnswers = (hub: HubHandle) => hub.control.effects.filter((e) => e.kind === "hub.secondary-limit").length;

/** A refusal (a secondary limit's, or a permission's) costs no budget here: the hub answers before the route runs. */
function refused(status: number): boolean {
  return status === 429 || status === 403;
}

export interface LoadModelResults {
  model: Model;
  steward: ReplayResult;
  probot: ReplayResult;
}

export async function runLoadModel(repos: number, log: (line: string) => void): Promise<LoadModelResults> {
  const model = generateModel({ repos, seed: 59 });
  const steward = await replayHour(model, "Steward", log);
  const probot = await replayHour(model, "Probot", log);
  for (const r of [steward, probot])
    log(
      `${r.app}: ${r.deliveries} deliveries, ${r.requests} rate-limited requests (${(r.requests * model.scale).toFixed(0)}/h for 10,000 repositories), ${r.secondary} secondary-limit answers, ${r.wallSeconds.toFixed(0)} s`,
    );
  return { model, steward, probot };
}

/** The targets of the load model: each met or not. */
export function loadModelTargets(r: LoadModelResults): { text: string; met: boolean }[] {
  const { steward: s, probot: p, model } = r;
  const hourly = s.requests * model.scale;
  const lost = s.decisions.reduce((n, d) => n + d.lost, 0);
  const p99 = Math.max(0, ...s.decisions.map((d) => d.p99).filter((v) => !Number.isNaN(v)));
  const ratio = p.requests / Math.max(1, s.requests);
  return [
    {
      met: hourly <= LIMIT * 0.6,
      text: `busiest hour at most 60% of a 12,500/h installation for 10,000 repositories (${hourly.toFixed(0)}/h, ${((100 * hourly) / LIMIT).toFixed(0)}%)`,
    },
    { met: s.secondary === 0, text: `no secondary-limit answer (${s.secondary})` },
    {
      met: p99 <= 60_000,
      text: `acting decisions within 60 s of their delivery at p99 (${(p99 / 1000).toFixed(1)} s)`,
    },
    { met: lost === 0, text: `no decision lost (${lost} not made by the end of the replay)` },
    { met: ratio >= 15, text: `at least 15x fewer rate-limited requests than the Probot app (${ratio.toFixed(1)}x)` },
  ];
}

export function renderLoadModel(r: LoadModelResults): string {
  const { model, steward: s, probot: p } = r;
  const C = model.scale;
  const row = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  const n = (v: number) => Math.round(v).toLocaleString("en");
  const per = (a: number, b: number) => (b ? (a / b).toFixed(3) : "-");
  const sec = (ms: number) => (Number.isNaN(ms) ? "-" : (ms / 1000).toFixed(1));
  // The model's own figures come from generating all 10,000 repositories (the same seed): no sampling noise.
  const org = generateModel({ repos: ORG_REPOS, seed: model.seed });
  const day = summarise(org.day);
  const hour = summarise(hourOf(org, BUSIEST_HOUR));
  const probotKinds = new Map(p.byKind.map((k) => [k.kind, k]));
  const acting = s.decisions.reduce((n, d) => n + d.acted, 0);
  const actingWrites = s.byHandler
    .filter((h) => ["rerun", "deployments"].includes(h.handler))
    .reduce((n, h) => n + h.writes, 0);
  const lines = [
    `Load model (docs/scale.md): ${model.repos.length} repositories of the model's mix (seed ${model.seed}), the busiest hour (${BUSIEST_HOUR}:00 UTC) replayed in ${(3600 / C).toFixed(0)} s, counts scaled x${C} to 10,000 repositories.`,
    "",
    row(["model, 10,000 repositories", "day", "busiest hour"]),
    row(["---", "---:", "---:"]),
    ...Object.keys(day)
      .sort()
      .map((k) => row([k, n(day[k] ?? 0), n(hour[k] ?? 0)])),
    "",
    row(["busiest hour, 10,000 repositories", "Steward", "Probot app"]),
    row(["---", "---:", "---:"]),
    row(["deliveries", n(s.deliveries * C), n(p.deliveries * C)]),
    row(["rate-limited requests (hub's count)", n(s.requests * C), n(p.requests * C)]),
    row([
      "of a 12,500/h installation",
      `${((100 * s.requests * C) / LIMIT).toFixed(0)}%`,
      `${((100 * p.requests * C) / LIMIT).toFixed(0)}%`,
    ]),
    row(["rate-limited requests per delivery", per(s.requests, s.deliveries), per(p.requests, p.deliveries)]),
    row(["writes", n(s.writes * C), n(p.writes * C)]),
    row(["secondary-limit answers (sample; enforced for Steward only)", s.secondary, p.secondary]),
    row(["points of the busiest minute (GitHub: at most 900)", n(s.peakMinutePoints), n(p.peakMinutePoints)]),
    row([
      "requests the app tied to a delivery (sample)",
      `${s.attributed} of ${s.requests}`,
      `${p.attributed} of ${p.requests}`,
    ]),
    "",
    `Steward: ${(p.requests / Math.max(1, s.requests)).toFixed(1)}x fewer rate-limited requests than the Probot app; ${per(actingWrites, acting)} writes of the re-run and deployment handlers per acting decision.`,
    "",
    row([
      "event kind (sample)",
      "deliveries",
      "Steward requests",
      "per delivery",
      "writes",
      "Probot requests",
      "per delivery",
    ]),
    row(["---", "---:", "---:", "---:", "---:", "---:", "---:"]),
    ...s.byKind.map((k) => {
      const pk = probotKinds.get(k.kind);
      return row([
        k.kind,
        k.deliveries,
        k.requests,
        per(k.requests, k.deliveries),
        k.writes,
        pk?.requests ?? 0,
        per(pk?.requests ?? 0, k.deliveries),
      ]);
    }),
    "",
    row(["Steward handler (sample)", "requests", "writes", "biggest routes"]),
    row(["---", "---:", "---:", "---"]),
    ...s.byHandler.map((h) => row([h.handler, h.requests, h.writes, h.top.join("; ")])),
    "",
    row(["hub's routes, Steward (sample)", "requests"]),
    row(["---", "---:"]),
    ...s.routes.slice(0, 10).map(([route, count]) => row([`\`${route}\``, count])),
    "",
    row([
      "acting decision, Steward",
      "expected",
      "acted",
      "declined, reported",
      "lost",
      "over 60 s",
      "p50 s",
      "p99 s",
      "max s",
    ]),
    row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]),
    ...s.decisions.map((d) =>
      row([d.flow, d.expected, d.acted, d.declined, d.lost, d.late, sec(d.p50), sec(d.p99), sec(d.max)]),
    ),
    "",
    `Replay: Steward ${s.wallSeconds.toFixed(0)} s (${s.cpuSeconds.toFixed(0)} CPU seconds, Steward and the hub in one process), Probot app ${p.wallSeconds.toFixed(0)} s (${p.cpuSeconds.toFixed(0)} CPU seconds).`,
    "",
    ...(s.replayErrors + p.replayErrors
      ? [`Replay steps that failed: Steward ${s.replayErrors}, Probot ${p.replayErrors}.`, ""]
      : []),
  ];
  return `${lines.join("\n")}\n`;
}
