// End-to-end answers against the sandbox hub: the hub runs in this process (as GitHub, elsewhere)
// and the app answering in its own: Steward with its built-in handlers, then a Probot app giving
// the same answers with the fewest requests (servers/probot-answers.ts), to show what the same
// Octokit plugins cost a Probot user. A latency runs from the moment the hub sends the delivery
// (workflow_run completed with a failure; deployment_protection_rule) to the moment the answer
// (the re-run request; the rule's answer) reaches the hub: both stamped on this process's clock.
// Runs go one at a time, each after the last was answered.
import { createHub } from "../../src/sandbox/hub.js";
import { percentile } from "./load.js";
import { startServer } from "./servers/child.js";

const ORG = "acme";
// A transient-failure rule that reads the failed job's log, as such rules do.
const RERUN_POLICY = "rerun:\n  enabled: true\n  delay: 0s\n  max_attempts: 2\n  rules:\n    - log: [ECONNRESET]\n";
const DEPLOY_POLICY = "deployments:\n  environments:\n    production:\n      branches: [main]\n";

export interface E2eRow {
  /** "Steward" or the Probot app's name. */
  server: string;
  flow: string;
  answered: number;
  sent: number;
  p50: number;
  p99: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const PROBOT_APP = "Probot app, same answers";

export async function benchEndToEnd(count: number): Promise<E2eRow[]> {
  return [...(await endToEnd("Steward", count)), ...(await endToEnd(PROBOT_APP, count))];
}

async function endToEnd(server: string, count: number): Promise<E2eRow[]> {
  const hub = await createHub();
  const steward = await startServer(server === "Steward" ? "steward" : "probot-answers", {
    BENCH_HUB: JSON.stringify({ env: hub.env, reviewerToken: hub.control.userToken("release-manager") }),
  });
  // When the hub sent each delivery, by the run it is about: the hub delivers with fetch.
  const sentAt = new Map<string, number>();
  const fetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    const at = performance.now();
    if (String(input) === steward.url && typeof init?.body === "string") {
      const event = (init.headers as Record<string, string>)["X-GitHub-Event"];
      const body = JSON.parse(init.body) as {
        action?: string;
        workflow_run?: { id: number; conclusion: string };
        deployment_callback_url?: string;
      };
      if (event === "workflow_run" && body.action === "completed" && body.workflow_run?.conclusion === "failure")
        sentAt.set(`rerun ${body.workflow_run.id}`, at);
      const rule = /\/runs\/(\d+)\//.exec(body.deployment_callback_url ?? "");
      if (event === "deployment_protection_rule" && rule) sentAt.set(`deployment_protection_rule ${rule[1]}`, at);
    }
    return fetch(input, init);
  };
  const answeredAt = async (key: string): Promise<number | undefined> => {
    const [answer, runId] = key.split(" ");
    const path = new RegExp(`/actions/runs/${runId}/${answer}`);
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(2)) {
      const request = hub.control
        .requests()
        .findLast((r) => r.method === "POST" && path.test(r.path) && r.status < 300);
      if (request) return request.receivedAtHr;
    }
    return undefined;
  };
  const flow = async (name: string, policy: string, start: (repo: string) => number): Promise<E2eRow> => {
    const repo = `bench-${name.split(" ")[0]}`;
    hub.control.createRepo({ owner: ORG, name: repo, files: { ".github/steward.yml": policy } });
    if (name.startsWith("deployment"))
      hub.domains.deployments.configureEnvironment({
        owner: ORG,
        repo,
        environment: "production",
        protectedByApp: true,
      });
    const key = name.startsWith("deployment") ? "deployment_protection_rule" : "rerun";
    const latencies: number[] = [];
    // The first run warms up: the policy read and the installation token, as a running service has them.
    for (let i = 0; i <= count; i++) {
      const id = start(repo);
      const at = await answeredAt(`${key} ${id}`);
      const sent = sentAt.get(`${key} ${id}`);
      if (i > 0 && at !== undefined && sent !== undefined) latencies.push(at - sent);
    }
    return {
      server,
      flow: name,
      answered: latencies.length,
      sent: count,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
    };
  };
  try {
    hub.control.setWebhookUrl(steward.url);
    const actions = hub.domains.actions;
    return [
      await flow("re-run (workflow_run failed -> re-run request)", RERUN_POLICY, (repo) => {
        const run = actions.startRun({
          owner: ORG,
          repo,
          workflow: "CI",
          jobs: [{ name: "test", steps: ["Set up job", "Test", "Complete job"] }],
        });
        actions.failJob({ runId: run.id, job: "test", step: "Test", log: "Error: read ECONNRESET" });
        return run.id;
      }),
      await flow(
        "deployment_protection_rule -> answer",
        DEPLOY_POLICY,
        (repo) =>
          actions.startRun({
            owner: ORG,
            repo,
            workflow: "Deploy",
            jobs: [{ name: "deploy", environment: "production" }],
          }).id,
      ),
    ];
  } finally {
    globalThis.fetch = fetch;
    hub.control.setWebhookUrl(undefined);
    await steward.stop();
    await hub.close();
  }
}
