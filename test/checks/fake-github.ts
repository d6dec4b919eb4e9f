// A small stand-in for the REST API on 127.0.0.1 for policy and check-run tests: repository
// contents at refs (with ETags and 304s), pull request files (paginated), and check runs that
// enforce the API's limits (422 on an over-long title or summary, more than 50 annotations,
// bad actions). Every request is recorded. Used until (and beside) the sandbox hub.
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ProbotOctokit } from "probot";
import type { InstallationOctokit } from "../../src/handler.js";

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  body: any;
  status: number;
}

export interface FakeCheckRun {
  id: number;
  owner: string;
  repo: string;
  name: string;
  head_sha: string;
  status: string;
  conclusion: string | null;
  details_url: string | null;
  external_id: string | null;
  output: { title: string | null; summary: string | null; text: string | null; annotations_count: number };
  actions: unknown[];
  annotations: Record<string, unknown>[];
  app: { id: number };
}

export interface PullFile {
  filename: string;
  status: "added" | "modified" | "removed" | "renamed" | "copied" | "changed" | "unchanged";
  previous_filename?: string;
}

const DEFAULT_REF = "main";

export async function startFakeGitHub(opts: { appId?: number } = {}) {
  const appId = opts.appId ?? 42;
  const requests: RecordedRequest[] = [];
  const files = new Map<string, string>();
  const pulls = new Map<string, PullFile[]>();
  const runs: FakeCheckRun[] = [];
  let nextId = 1000;
  /** Status to answer the next matching requests with (e.g. 500), consumed in order. */
  const failures: { method: string; pathPrefix: string; status: number }[] = [];

  const fileKey = (owner: string, repo: string, ref: string, path: string) => `${owner.toLowerCase()}/${repo.toLowerCase()}@${ref}:${path}`;

  const server = createServer(async (req, res) => {
    const url = new URL(req.url!, "http://127.0.0.1");
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const record: RecordedRequest = { method: req.method!, path: decodeURIComponent(url.pathname), query: url.searchParams, headers: req.headers, body: raw ? JSON.parse(raw) : undefined, status: 0 };
    requests.push(record);
    const send = (status: number, body?: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", "x-github-media-type": "github.v3", ...headers });
      res.end(body === undefined ? "" : JSON.stringify(body));
    };
    const failure = failures.findIndex((f) => f.method === req.method && record.path.startsWith(f.pathPrefix));
    if (failure >= 0) {
      const [f] = failures.splice(failure, 1);
      return send(f!.status, { message: "injected failure" });
    }
    try {
      route(req.method!, record.path, url.searchParams, record.body, req.headers, send);
    } catch (e) {
      send(500, { message: (e as Error).message });
    }
  });

  function route(method: string, path: string, query: URLSearchParams, body: any, headers: IncomingMessage["headers"], send: (s: number, b?: unknown, h?: Record<string, string>) => void) {
    let m: RegExpExecArray | null;
    if (method === "GET" && (m = /^\/repos\/([^/]+)\/([^/]+)\/contents\/(.+)$/.exec(path))) {
      const text = files.get(fileKey(m[1]!, m[2]!, query.get("ref") ?? DEFAULT_REF, m[3]!));
      if (text === undefined) return send(404, { message: "Not Found", documentation_url: "https://docs.github.com/rest/repos/contents#get-repository-content" });
      const etag = `"${createHash("sha1").update(text).digest("hex")}"`;
      if (headers["if-none-match"] === etag) return send(304, undefined, { etag });
      const content = Buffer.from(text).toString("base64").replace(/(.{60})/g, "$1\n");
      return send(200, { type: "file", encoding: "base64", size: Buffer.byteLength(text), name: m[3]!.split("/").pop(), path: m[3], content, sha: etag.slice(1, -1) }, { etag });
    }
    if (method === "GET" && (m = /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/files$/.exec(path))) {
      const list = pulls.get(`${m[1]}/${m[2]}#${m[3]}`);
      if (!list) return send(404, { message: "Not Found" });
      const perPage = Math.min(100, Number(query.get("per_page") ?? 30));
      const page = Number(query.get("page") ?? 1);
      const slice = list.slice((page - 1) * perPage, page * perPage).map((f) => ({ sha: "0".repeat(40), additions: 1, deletions: 0, changes: 1, ...f }));
      const last = Math.max(1, Math.ceil(list.length / perPage));
      const link: Record<string, string> = page < last ? { link: `<${baseUrl}${path}?per_page=${perPage}&page=${page + 1}>; rel="next", <${baseUrl}${path}?per_page=${perPage}&page=${last}>; rel="last"` } : {};
      return send(200, slice, link);
    }
    if (method === "GET" && (m = /^\/repos\/([^/]+)\/([^/]+)\/commits\/([^/]+)\/check-runs$/.exec(path))) {
      let list = runs.filter((r) => r.owner === m![1] && r.repo === m![2] && r.head_sha === m![3]);
      const name = query.get("check_name");
      if (name) list = list.filter((r) => r.name === name);
      if (query.get("app_id")) list = list.filter((r) => String(r.app.id) === query.get("app_id"));
      list.sort((a, b) => b.id - a.id);
      if ((query.get("filter") ?? "latest") === "latest") list = list.filter((r, i) => list.findIndex((o) => o.name === r.name) === i);
      return send(200, { total_count: list.length, check_runs: list.map(publicRun) });
    }
    if (method === "GET" && (m = /^\/repos\/([^/]+)\/([^/]+)\/check-runs\/(\d+)\/annotations$/.exec(path))) {
      const run = runs.find((r) => r.id === Number(m![3]));
      if (!run) return send(404, { message: "Not Found" });
      const perPage = Math.min(100, Number(query.get("per_page") ?? 30));
      const page = Number(query.get("page") ?? 1);
      const last = Math.max(1, Math.ceil(run.annotations.length / perPage));
      const link: Record<string, string> = page < last ? { link: `<${baseUrl}${path}?per_page=${perPage}&page=${page + 1}>; rel="next"` } : {};
      return send(200, run.annotations.slice((page - 1) * perPage, page * perPage), link);
    }
    if (method === "POST" && (m = /^\/repos\/([^/]+)\/([^/]+)\/check-runs$/.exec(path))) {
      const invalid = checkRunBodyError(body, true);
      if (invalid) return send(422, { message: "Validation Failed", errors: [{ resource: "CheckRun", code: "invalid", field: invalid }] });
      const run: FakeCheckRun = { id: nextId++, owner: m[1]!, repo: m[2]!, name: body.name, head_sha: body.head_sha, status: "queued", conclusion: null, details_url: null, external_id: null, output: { title: null, summary: null, text: null, annotations_count: 0 }, actions: [], annotations: [], app: { id: appId } };
      runs.push(run);
      apply(run, body);
      // The API keeps 1000 runs of a name in a suite and deletes older ones.
      const same = runs.filter((r) => r.owner === run.owner && r.repo === run.repo && r.head_sha === run.head_sha && r.name === run.name);
      if (same.length > 1000) runs.splice(runs.indexOf(same[0]!), 1);
      return send(201, publicRun(run));
    }
    if (method === "PATCH" && (m = /^\/repos\/([^/]+)\/([^/]+)\/check-runs\/(\d+)$/.exec(path))) {
      const run = runs.find((r) => r.id === Number(m![3]) && r.owner === m![1] && r.repo === m![2]);
      if (!run) return send(404, { message: "Not Found" });
      const invalid = checkRunBodyError(body, false);
      if (invalid) return send(422, { message: "Validation Failed", errors: [{ resource: "CheckRun", code: "invalid", field: invalid }] });
      apply(run, body);
      return send(200, publicRun(run));
    }
    send(404, { message: "Not Found" });
  }

  function apply(run: FakeCheckRun, body: any) {
    for (const k of ["status", "conclusion", "details_url", "external_id"] as const) if (body[k] !== undefined) (run as any)[k] = body[k];
    if (body.conclusion) run.status = "completed";
    if (body.actions) run.actions = body.actions;
    if (body.output) {
      run.output.title = body.output.title;
      run.output.summary = body.output.summary;
      if (body.output.text !== undefined) run.output.text = body.output.text;
      run.annotations.push(...(body.output.annotations ?? []));
      run.output.annotations_count = run.annotations.length;
    }
  }

  function publicRun(run: FakeCheckRun) {
    const { annotations: _a, owner: _o, repo: _r, ...rest } = run;
    return { ...rest, html_url: `https://github.example/${run.owner}/${run.repo}/runs/${run.id}` };
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    baseUrl,
    requests,
    runs,
    failures,
    /** Put (or with `text` undefined, delete) a file at a ref (default branch `main`). */
    setFile(owner: string, repo: string, path: string, text: string | undefined, ref = DEFAULT_REF) {
      if (text === undefined) files.delete(fileKey(owner, repo, ref, path));
      else files.set(fileKey(owner, repo, ref, path), text);
    },
    setPullFiles(owner: string, repo: string, number: number, list: PullFile[]) {
      pulls.set(`${owner}/${repo}#${number}`, list);
    },
    writes() {
      return requests.filter((r) => r.method !== "GET");
    },
    octokit(): InstallationOctokit {
      return new ProbotOctokit({
        auth: { token: "ghs_test_token_for_fake_api" },
        baseUrl,
        retry: { enabled: false },
        throttle: { enabled: false },
      }) as InstallationOctokit;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type FakeGitHub = Awaited<ReturnType<typeof startFakeGitHub>>;

const LEVELS = new Set(["notice", "warning", "failure"]);

/** The API's 422 rules for check-run bodies, as far as Steward can break them. */
function checkRunBodyError(body: any, create: boolean): string | undefined {
  if (create && (typeof body?.name !== "string" || typeof body?.head_sha !== "string")) return "name";
  if (body.conclusion && body.status && body.status !== "completed") return "status";
  if (body.details_url !== undefined && !/^https?:\/\//.test(body.details_url)) return "details_url";
  const out = body.output;
  if (out) {
    if (typeof out.title !== "string" || out.title.length > 255) return "output.title";
    if (typeof out.summary !== "string" || out.summary.length > 65535) return "output.summary";
    if (out.text !== undefined && (typeof out.text !== "string" || out.text.length > 65535)) return "output.text";
    const annotations = out.annotations ?? [];
    if (annotations.length > 50) return "output.annotations";
    for (const a of annotations) {
      if (typeof a.path !== "string" || !Number.isInteger(a.start_line) || !Number.isInteger(a.end_line) || a.start_line < 1 || a.end_line < a.start_line) return "annotations.lines";
      if (!LEVELS.has(a.annotation_level) || typeof a.message !== "string" || a.message.length === 0) return "annotations.level";
      if ((a.start_column !== undefined || a.end_column !== undefined) && a.start_line !== a.end_line) return "annotations.columns";
    }
  }
  if (body.actions) {
    if (body.actions.length > 3) return "actions";
    for (const a of body.actions) if (a.label.length > 20 || a.description.length > 40 || a.identifier.length > 20) return "actions.length";
  }
  return undefined;
}
