// A small stand-in for the REST API on 127.0.0.1 with the routes the deployments handler uses
// (runs, check runs, deployments and statuses, protection-rule callbacks, pending deployments),
// enforcing who may answer: the installation token for callbacks, a required reviewer for reviews.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { onceFor } from "../../../src/router/once.js";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { ProbotOctokit } from "probot";
import type { HandlerContext, ScheduleRequest, TaskContext } from "../../../src/handler.js";
import type { DeploymentsPolicy } from "../../../handlers/deployments/policy.js";
import { MemoryStore } from "../rerun/fake-api.js";

export const INSTALLATION_TOKEN = "ghs_installation_token_kept_secret_1";
export const REVIEWER_TOKEN = "ghp_reviewer_token_kept_secret_2";

export interface FakeEnvironment {
  id: number;
  name: string;
  /** Tokens whose owner is a required reviewer. */
  reviewers: string[];
}

export interface FakeDeployState {
  runs: Record<number, { head_sha: string; head_branch: string | null; status: string; head_repository?: Record<string, unknown>; repository?: Record<string, unknown> }>;
  checkRuns: Record<string, { name: string; status: string; conclusion: string | null }[]>;
  deployments: { id: number; sha: string; environment: string; statuses: string[] }[];
  /** Environments of a run waiting for review. */
  pending: Record<number, FakeEnvironment[]>;
  /** `runId:environment` of protection rules still waiting for Steward. */
  waitingRules: Set<string>;
  /** Status to answer the next POSTs with instead of handling them (e.g. 500, 422). */
  failNextPosts: { status: number; message: string }[];
}

export interface Recorded {
  method: string;
  path: string;
  query: string;
  authorization: string | undefined;
  body: Record<string, any> | undefined;
  status: number;
}

function json(res: ServerResponse, status: number, body: unknown): number {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(body));
  return status;
}

async function readBody(req: IncomingMessage): Promise<Record<string, any> | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

function route(state: FakeDeployState, method: string, path: string, url: URL, token: string | undefined, body: Record<string, any> | undefined, res: ServerResponse): number {
  let m: RegExpExecArray | null;
  if (method === "POST" && state.failNextPosts.length) {
    const fail = state.failNextPosts.shift()!;
    return json(res, fail.status, { message: fail.message });
  }
  if (method === "GET" && (m = /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)$/.exec(path))) {
    const run = state.runs[Number(m[1])];
    return run ? json(res, 200, { id: Number(m[1]), created_at: "2026-11-23T08:00:00Z", ...run }) : json(res, 404, { message: "Not Found" });
  }
  if (method === "GET" && (m = /^\/repos\/[^/]+\/[^/]+\/commits\/([0-9a-f]+)\/check-runs$/.exec(path))) {
    if (url.searchParams.get("filter") !== "latest") return json(res, 400, { message: "expected filter=latest" });
    const runs = (state.checkRuns[m[1]!] ?? []).map((r, i) => ({ id: i + 1, head_sha: m![1], ...r }));
    return json(res, 200, { total_count: runs.length, check_runs: runs });
  }
  if (method === "GET" && /^\/repos\/[^/]+\/[^/]+\/deployments$/.test(path)) {
    const sha = url.searchParams.get("sha");
    const env = url.searchParams.get("environment");
    const list = state.deployments.filter((d) => (!sha || d.sha === sha) && (!env || d.environment === env)).map(({ statuses: _s, ...d }) => d);
    return json(res, 200, list);
  }
  if (method === "GET" && (m = /^\/repos\/[^/]+\/[^/]+\/deployments\/(\d+)\/statuses$/.exec(path))) {
    const d = state.deployments.find((x) => x.id === Number(m![1]));
    return json(res, 200, (d?.statuses ?? []).map((s, i) => ({ id: i + 1, state: s })));
  }
  if (method === "POST" && (m = /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)\/deployment_protection_rule$/.exec(path))) {
    if (token !== INSTALLATION_TOKEN) return json(res, 403, { message: "Resource not accessible by integration" });
    const key = `${m[1]}:${body?.environment_name}`;
    if (!state.waitingRules.has(key)) return json(res, 422, { message: "Validation Failed" });
    if (body?.state) state.waitingRules.delete(key);
    return json(res, 204, {});
  }
  if ((m = /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)\/pending_deployments$/.exec(path))) {
    const envs = state.pending[Number(m[1])] ?? [];
    if (method === "GET") {
      return json(res, 200, envs.map((e) => ({ environment: { id: e.id, name: e.name }, wait_timer: 0, current_user_can_approve: !!token && e.reviewers.includes(token), reviewers: [] })));
    }
    if (token === INSTALLATION_TOKEN) return json(res, 403, { message: "Resource not accessible by integration" });
    const ids: number[] = body?.environment_ids ?? [];
    for (const id of ids) {
      const env = envs.find((e) => e.id === id);
      if (!env || !token || !env.reviewers.includes(token)) return json(res, 422, { message: "Validation Failed" });
    }
    state.pending[Number(m[1])] = envs.filter((e) => !ids.includes(e.id));
    return json(res, 200, []);
  }
  return json(res, 404, { message: "Not Found" });
}

export async function startFakeApi(state: FakeDeployState) {
  const requests: Recorded[] = [];
  const server = createServer(async (req, res) => {
    const url = new URL(req.url!, "http://x");
    const body = await readBody(req);
    const token = req.headers.authorization?.replace(/^(token|bearer) /i, "");
    const status = route(state, req.method!, url.pathname, url, token, body, res);
    requests.push({ method: req.method!, path: url.pathname, query: url.search, authorization: req.headers.authorization, body, status });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, close: () => new Promise((r) => server.close(r)) };
}

export function octokitFor(baseUrl: string, token: string) {
  return new ProbotOctokit({ auth: { token }, baseUrl, throttle: { enabled: false }, retry: { enabled: false }, log: pino({ level: "silent" }) });
}

export interface Harness {
  store: MemoryStore;
  scheduled: ScheduleRequest[];
  cancelled: string[];
  logLines: string[];
  context(name: string, payload: Record<string, any>, policy: DeploymentsPolicy | undefined): HandlerContext<any, DeploymentsPolicy>;
  task(request: ScheduleRequest, policy: DeploymentsPolicy): TaskContext<DeploymentsPolicy>;
}

export function makeHarness(baseUrl: string, store = new MemoryStore()): Harness {
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
  const config = { apiUrl: baseUrl, reviewerToken: REVIEWER_TOKEN } as never;
  const common = { octokit: octokitFor(baseUrl, INSTALLATION_TOKEN), log, store, once: onceFor(store, "deployments", "test"), scheduler, checks, attempt: 1, config, signal: new AbortController().signal };
  return {
    store,
    scheduled,
    cancelled,
    logLines,
    context(name, payload, policy) {
      return { ...common, deliveryId: crypto.randomUUID(), name, action: payload.action, payload: payload as never, installationId: 7, policy, loadPolicy: async () => policy! };
    },
    task(request, policy) {
      return { ...common, key: request.key, data: structuredClone(request.data), installationId: request.installationId, loadPolicy: async () => policy };
    },
  };
}
