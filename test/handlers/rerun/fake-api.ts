// A small stand-in for the REST API on 127.0.0.1 (runs, jobs, logs, pulls, branches, re-runs), with a
// second server playing the log storage host, and a handler context around them. Used until (and
// beside) the sandbox hub, for the cases the hub cannot stage: a log host that records credentials.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { onceFor } from "../../../src/router/once.js";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { ProbotOctokit } from "probot";
import type { HandlerContext, ScheduleRequest, TaskContext } from "../../../src/handler.js";
import type { CheckReport } from "../../../src/checks/types.js";
import type { AuditEntry, KeyValue, Store } from "../../../src/store/types.js";
import type { RerunPolicy } from "../../../handlers/rerun/policy.js";

export const TOKEN = "ghs_faketoken_never_leaves_the_api_host";

export interface FakeJob {
  id: number;
  name: string;
  conclusion: string | null;
  steps: { name: string; conclusion: string | null; number: number; status: string }[];
  log?: string;
}

export interface FakeState {
  run: { id: number; run_attempt: number; status: string; conclusion: string | null; head_sha: string };
  jobs: FakeJob[];
  pulls: Record<number, string>;
  /** Open pull requests from forks: number -> head label (`owner:branch`) and sha. */
  forkPulls?: Record<number, { head: string; sha: string }>;
  branches: Record<string, string>;
  /**
   * Answer of the next re-run requests, in order; default 201. `accepted`: the re-run takes
   * effect anyway (the client lost the real answer and sees this one, e.g. its retry's refusal).
   */
  rerunAnswers: { status: number; message?: string; accepted?: boolean }[];
}

export interface Recorded {
  method: string;
  path: string;
  authorization: string | undefined;
  host: "api" | "logs";
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(body));
}

export async function startFakeApi(state: FakeState) {
  const requests: Recorded[] = [];
  const logServer = createServer((req, res) => {
    requests.push({ method: req.method!, path: req.url!, authorization: req.headers.authorization, host: "logs" });
    const id = Number(/^\/blob\/(\d+)/.exec(req.url!)?.[1]);
    const log = state.jobs.find((j) => j.id === id)?.log;
    if (log === undefined) return json(res, 404, { message: "gone" });
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
    res.end(log);
  });
  const logsUrl = await listen(logServer);

  const api = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url!, "http://x");
    const path = url.pathname;
    requests.push({ method: req.method!, path, authorization: req.headers.authorization, host: "api" });
    let m: RegExpExecArray | null;
    if (req.method === "GET" && (m = /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)\/attempts\/(\d+)\/jobs$/.exec(path))) {
      const jobs = state.jobs.map(({ log: _log, ...j }) => ({ ...j, run_id: state.run.id, run_attempt: Number(m![2]), status: "completed" }));
      return json(res, 200, { total_count: jobs.length, jobs });
    }
    if (req.method === "GET" && (m = /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)$/.exec(path))) {
      return json(res, 200, { ...state.run, name: "CI", event: "push", head_branch: "main", pull_requests: [] });
    }
    if (req.method === "GET" && (m = /^\/repos\/[^/]+\/[^/]+\/actions\/jobs\/(\d+)\/logs$/.exec(path))) {
      const job = state.jobs.find((j) => j.id === Number(m![1]));
      if (!job) return json(res, 404, { message: "Not Found" });
      res.writeHead(302, { location: `${logsUrl}/blob/${job.id}?sig=abc` });
      return res.end();
    }
    if (req.method === "GET" && /^\/repos\/[^/]+\/[^/]+\/pulls$/.test(path)) {
      const open = Object.entries(state.forkPulls ?? {}).filter(([, p]) => p.head === url.searchParams.get("head"));
      return json(res, 200, open.map(([n, p]) => ({ number: Number(n), head: { sha: p.sha, label: p.head } })));
    }
    if (req.method === "GET" && (m = /^\/repos\/[^/]+\/[^/]+\/pulls\/(\d+)$/.exec(path))) {
      const sha = state.pulls[Number(m[1])];
      return sha ? json(res, 200, { number: Number(m[1]), head: { sha } }) : json(res, 404, { message: "Not Found" });
    }
    if (req.method === "GET" && (m = /^\/repos\/[^/]+\/[^/]+\/branches\/(.+)$/.exec(path))) {
      const sha = state.branches[decodeURIComponent(m[1]!)];
      return sha ? json(res, 200, { name: m[1], commit: { sha } }) : json(res, 404, { message: "Branch not found" });
    }
    if (req.method === "POST" && /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/\d+\/(rerun|rerun-failed-jobs)$/.test(path)) {
      const answer = state.rerunAnswers.shift() ?? { status: 201 };
      if (answer.status === 201 || answer.accepted) {
        state.run.run_attempt += 1;
        state.run.status = "queued";
        if (answer.status === 201) return json(res, 201, {});
      }
      return json(res, answer.status, { message: answer.message, documentation_url: "https://docs.github.com/rest" });
    }
    json(res, 404, { message: "Not Found" });
  });
  const url = await listen(api);
  return {
    url,
    requests,
    async close() {
      await Promise.all([new Promise((r) => api.close(r)), new Promise((r) => logServer.close(r))]);
    },
  };
}

/** An in-memory Store with the contract's semantics (claims, TTLs ignored: tests are short). */
export class MemoryStore implements Store {
  readonly kv = new Map<string, { value: unknown; updatedAt: Date }>();
  readonly audits: Required<AuditEntry>[] = [];
  async claim(key: string, opts?: { value?: unknown }): Promise<boolean> {
    if (this.kv.has(key)) return false;
    this.kv.set(key, { value: opts?.value ?? true, updatedAt: new Date() });
    return true;
  }
  async release(key: string) { this.kv.delete(key); }
  async get<T>(key: string) { return this.kv.get(key)?.value as T | undefined; }
  async set(key: string, value: unknown) { this.kv.set(key, { value: structuredClone(value), updatedAt: new Date() }); }
  async delete(key: string) { this.kv.delete(key); }
  async list<T>(prefix: string): Promise<KeyValue<T>[]> {
    return [...this.kv].filter(([k]) => k.startsWith(prefix)).sort().map(([key, v]) => ({ key, value: v.value as T, updatedAt: v.updatedAt }));
  }
  async audit(entry: AuditEntry) { this.audits.push({ ...entry, at: entry.at ?? new Date() }); }
  async auditLog(filter?: { kind?: string }) { return this.audits.filter((a) => !filter?.kind || a.kind === filter.kind); }
}

export function makeOctokit(baseUrl: string) {
  return new ProbotOctokit({
    auth: { token: TOKEN },
    baseUrl,
    throttle: { enabled: false },
    retry: { enabled: false },
    log: pino({ level: "silent" }),
  });
}

export interface Harness {
  store: MemoryStore;
  scheduled: ScheduleRequest[];
  reports: CheckReport[];
  logLines: string[];
  handlerContext(payload: Record<string, unknown>, policy: RerunPolicy, deliveryId?: string): HandlerContext<any, RerunPolicy>;
  taskContext(request: ScheduleRequest): TaskContext<RerunPolicy>;
}

export function makeHarness(baseUrl: string): Harness {
  const store = new MemoryStore();
  const scheduled: ScheduleRequest[] = [];
  const reports: CheckReport[] = [];
  const logLines: string[] = [];
  const log = pino({ level: "debug" }, { write: (line: string) => void logLines.push(line) });
  const octokit = makeOctokit(baseUrl);
  const scheduler = {
    async schedule(r: ScheduleRequest) { scheduled.push(structuredClone(r)); },
    async cancel() {},
  };
  const checks = { async report(r: CheckReport) { reports.push(r); return { id: reports.length, html_url: null }; } };
  const common = { octokit, log, store, once: onceFor(store, "rerun", "test"), scheduler, checks, attempt: 1, config: {} as never, signal: new AbortController().signal };
  return {
    store,
    scheduled,
    reports,
    logLines,
    handlerContext(payload, policy, deliveryId = crypto.randomUUID()) {
      return {
        ...common,
        deliveryId,
        name: "workflow_run",
        action: payload.action as string,
        payload: payload as never,
        installationId: 1,
        policy,
        loadPolicy: async () => policy,
      };
    },
    taskContext(request) {
      return { ...common, key: request.key, data: structuredClone(request.data), installationId: request.installationId, loadPolicy: async () => { throw new Error("unused"); } };
    },
  };
}
