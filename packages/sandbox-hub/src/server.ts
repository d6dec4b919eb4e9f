// The HTTP front of the hub: credentials, faults, limits, routing, JSON conventions,
// ETags and the response headers the seeds list. Routes only return data or throw HubError.
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { BLOB_PATH } from "./blobs/routes.js";
import { appendBounded } from "./core/bounded-log.js";
import { actorOf } from "./core/actor.js";
import { badCredentials, errorBody, noRoute } from "./core/errors.js";
import { looksLikeJwt, verifyAppJwt } from "./core/jwt.js";
import type { RouteMatch, RouteTable } from "./core/router.js";
import { HubError, type AuthInfo, type HubRequest, type HubResponse, type RouteOptions } from "./core/types.js";
import type { SandboxHub } from "./sandbox-hub.js";

const CONTROL_PREFIX = "/_sandbox/";
const BODY_METHODS = new Set(["POST", "PATCH", "PUT", "DELETE"]);

export function createHubServer(hub: SandboxHub, routes: RouteTable): Server {
  const server = createServer((req, res) => {
    handle(hub, routes, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "application/json; charset=utf-8" });
      res.end(JSON.stringify({ message: "Server Error" }));
    });
  });
  server.keepAliveTimeout = 5_000;
  return server;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** `/repositories/{id}/...` addresses a repository by id (where renamed repositories redirect). */
function resolveIdPath(hub: SandboxHub, path: string): string {
  const m = /^\/repositories\/(\d+)(\/.*)?$/.exec(path);
  if (!m) return path;
  const repo = hub.repoById(Number(m[1]));
  return repo ? `/repos/${repo.owner}/${repo.name}${m[2] ?? ""}` : path;
}

function parseJsonBody(raw: Buffer): Record<string, unknown> | undefined {
  const text = raw.toString("utf8");
  if (text.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HubError(400, "Problems parsing JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new HubError(400, "Body should be a JSON object");
  return value as Record<string, unknown>;
}

/** A browser's form post (GitHub's web pages, e.g. the app manifest form); the API itself takes JSON. */
function isFormPost(req: IncomingMessage): boolean {
  return /^application\/x-www-form-urlencoded\b/i.test(req.headers["content-type"] ?? "");
}

function parseFormBody(raw: Buffer): Record<string, unknown> {
  return Object.fromEntries(new URLSearchParams(raw.toString("utf8")));
}

/** Who is calling. Throws 401 for credentials that do not verify, 403 while locked out. */
function authenticate(hub: SandboxHub, header: string | undefined, source: string): AuthInfo {
  if (!header) return { kind: "none" };
  if (hub.loginAttempts.locked(source, hub.now())) {
    throw new HubError(403, "Maximum number of login attempts exceeded. Please try again later.");
  }
  const m = /^(bearer|token)\s+(\S+)\s*$/i.exec(header);
  const fail = (): never => {
    hub.loginAttempts.fail(source, hub.now());
    throw badCredentials();
  };
  if (!m) return fail();
  const credential = m[2]!;
  // The new installation tokens (`ghs_<app>_<JWT>`) contain dots too: a prefixed credential is a token.
  if (!/^gh[a-z]_/.test(credential) && looksLikeJwt(credential)) {
    const result = verifyAppJwt(credential, (id) => (id === hub.appId ? hub.appPublicKey : undefined), hub.now());
    return result.ok ? { kind: "app", appId: result.appId } : fail();
  }
  const token = hub.tokens.lookup(credential);
  if (!token) return fail();
  if (token.kind === "user") return { kind: "user", login: token.login, token: credential };
  if (hub.now() >= token.expiresAt) return fail();
  const inst = hub.accounts.installations.get(token.installationId);
  if (!inst) return fail();
  if (inst.suspended_at) throw new HubError(403, "This installation has been suspended");
  return { kind: "installation", installationId: inst.id, token: credential };
}

const ALLOWED: Record<NonNullable<RouteOptions["auth"]>, AuthInfo["kind"][]> = {
  app: ["app"],
  installation: ["installation"],
  user: ["user"],
  "installation-or-user": ["installation", "user"],
  any: ["app", "installation", "user"],
  none: ["none", "app", "installation", "user"],
};

function authorize(hub: SandboxHub, req: HubRequest, options: RouteOptions): void {
  const wanted = options.auth ?? "installation";
  const kind = req.auth.kind;
  if (!ALLOWED[wanted].includes(kind)) {
    if (wanted === "app") throw new HubError(401, "A JSON web token could not be decoded");
    if (kind === "none") throw new HubError(401, "Requires authentication");
    throw new HubError(403, "Resource not accessible by integration");
  }
  if (kind !== "installation" || !options.permission) return;
  const token = hub.tokens.lookup((req.auth as { token: string }).token);
  const perms = token?.kind === "installation" ? token.permissions : {};
  for (const [name, level] of Object.entries(options.permission)) {
    const have = perms[name];
    if (!(have === "write" || (have === "read" && level === "read")))
      throw new HubError(403, "Resource not accessible by integration");
  }
}

function bucketKey(auth: AuthInfo, source: string): string {
  return auth.kind === "none" ? `ip:${source}` : actorOf(auth);
}

function rateLimitMessage(auth: AuthInfo, source: string, hub: SandboxHub): string {
  if (auth.kind === "installation") return `API rate limit exceeded for installation ID ${auth.installationId}.`;
  if (auth.kind === "user") return `API rate limit exceeded for user ID ${hub.user(auth.login)?.id ?? 0}.`;
  if (auth.kind === "app") return `API rate limit exceeded for app ID ${auth.appId}.`;
  return `API rate limit exceeded for ${source}. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)`;
}

/** `X-GitHub-Media-Type` for an Accept header: `github.v3; format=json`, `github.v3; param=raw`, ... */
export function mediaType(accept: string | undefined): string {
  const m = /application\/vnd\.github(?:\.v3)?(?:\.([a-z-]+))?(?:\+([a-z]+))?/i.exec(accept ?? "");
  const param = m?.[1] && m[1] !== "v3" ? m[1] : undefined;
  const format = m?.[2] ?? (param ? undefined : "json");
  return ["github.v3", param ? `param=${param}` : undefined, format ? `format=${format}` : undefined]
    .filter(Boolean)
    .join("; ");
}

function etagOf(identity: string, payload: string): string {
  return `W/"${createHash("sha256").update(identity).update("\0").update(payload).digest("hex")}"`;
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const bare = (t: string) => t.trim().replace(/^W\//, "");
  return header.split(",").some((t) => t.trim() === "*" || bare(t) === bare(etag));
}

const STATUS_TEXT: Record<number, string> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  301: "Moved Permanently",
  302: "Found",
  304: "Not Modified",
  307: "Temporary Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  410: "Gone",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
};

function statusLine(status: number): string {
  return `${status} ${STATUS_TEXT[status] ?? ""}`.trim();
}

function serialise(body: unknown): string {
  // Convention 2: a field with no value is null, never omitted.
  return JSON.stringify(body, (_k, v: unknown) => (v === undefined ? null : v));
}

function errorResponse(err: HubError): HubResponse {
  return { status: err.status, body: errorBody(err), headers: err.headers ?? {} };
}

async function handle(hub: SandboxHub, routes: RouteTable, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const receivedAt = Date.now();
  const receivedAtHr = performance.now();
  const raw = await readBody(req);
  const url = new URL(req.url ?? "/", "http://sandbox");
  const method = (req.method ?? "GET").toUpperCase();
  const path = resolveIdPath(hub, url.pathname);
  const source = req.socket.remoteAddress ?? "unknown";
  const control = path.startsWith(CONTROL_PREFIX);
  // Short-lived download URLs are logged (tests check they were fetched without Authorization).
  const logged = !control || path.startsWith(BLOB_PATH);
  const match: RouteMatch | undefined = routes.match(method, path);
  const hubReq: HubRequest = {
    method,
    path,
    params: match?.params ?? {},
    query: url.searchParams,
    headers: req.headers,
    body: undefined,
    auth: { kind: "none" },
    baseUrl: hub.baseUrl,
  };
  const headers: Record<string, string> = {
    Date: hub.now().toUTCString(),
    "X-GitHub-Media-Type": mediaType(req.headers.accept),
    "X-GitHub-Api-Version-Selected": "2022-11-28",
    "X-GitHub-Request-Id": randomBytes(8).toString("hex").toUpperCase(),
    "X-Content-Type-Options": "nosniff",
    "Access-Control-Allow-Origin": "*",
    Vary: "Accept, Authorization, Cookie, X-GitHub-OTP",
  };
  let response: HubResponse;
  let counted = false;
  let bucket: ReturnType<typeof hub.rateLimiter.bucket> | undefined;

  let fault: ReturnType<typeof hub.faults.decide> = undefined;
  try {
    // The storage host is another host: only faults naming its paths apply to it (a slow or
    // failing log store), so an API-wide pattern does not reach it.
    const storage = path.startsWith(BLOB_PATH);
    if (!control || storage) {
      fault = hub.faults.decide(method, path, match?.route.pattern, storage ? BLOB_PATH : undefined);
      // A slow answer is under way while it waits (it holds a concurrent request); a slow failure
      // fails before anything else is looked at.
      if (fault?.latencyMs && !fault.after && (fault.drop || fault.status))
        await new Promise((r) => setTimeout(r, fault!.latencyMs));
      // A fault `after` the route is decided now and applied once the route has run (below).
      if (fault?.drop && !fault.after) {
        record(hub, hubReq, match, 0, req, receivedAt, receivedAtHr);
        req.socket.destroy();
        return;
      }
      if (fault?.status && !fault.after) throw new HubError(fault.status, fault.message);
    }
    if (!control || req.headers.authorization) hubReq.auth = authenticate(hub, req.headers.authorization, source);
    // The OAuth web flow is the site's, not the REST API's: no API rate limit.
    if (!control && path !== "/rate_limit" && !path.startsWith("/login/oauth/")) {
      bucket = hub.rateLimiter.bucket(bucketKey(hubReq.auth, source), hub.now());
      Object.assign(headers, hub.rateLimiter.headers(bucket));
      if (bucket.used >= bucket.limit) throw new HubError(403, rateLimitMessage(hubReq.auth, source, hub));
      const key = bucketKey(hubReq.auth, source);
      const refusal = hub.rateLimiter.admit(key, method, hub.now());
      if (refusal) {
        hub.effect("hub.secondary-limit", { credential: hubReq.auth.kind, limit: refusal.limit, path });
        throw new HubError(
          403,
          `You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ${headers["X-GitHub-Request-Id"]}.`,
          undefined,
          { "Retry-After": String(refusal.retryAfterSec) },
        );
      }
      res.once("close", () => hub.rateLimiter.release(key));
      const secondary = hub.rateLimiter.secondaryHit();
      if (secondary) {
        throw new HubError(
          secondary.status,
          `You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ${headers["X-GitHub-Request-Id"]}.`,
          undefined,
          { "Retry-After": String(secondary.retryAfterSec) },
        );
      }
      counted = true;
    }
    if (fault?.latencyMs && (fault.after || !(fault.drop || fault.status)))
      await new Promise((r) => setTimeout(r, fault!.latencyMs));
    if (!match) throw noRoute(method, path);
    authorize(hub, hubReq, match.route.options);
    if (match.route.options.permission) {
      headers["X-Accepted-GitHub-Permissions"] = Object.entries(match.route.options.permission)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ");
    }
    if (BODY_METHODS.has(method)) hubReq.body = isFormPost(req) ? parseFormBody(raw) : parseJsonBody(raw);
    response = await match.route.handler(hubReq);
  } catch (err) {
    if (err instanceof HubError) response = errorResponse(err);
    else {
      response = {
        status: 500,
        body: { message: "Server Error", documentation_url: "https://docs.github.com/rest", status: "500" },
      };
      hub.effect("hub.error", { path, error: err instanceof Error ? err.message : String(err) });
    }
  }

  // A fault `after` the route: the change stands, but the client never sees the real answer.
  if (fault?.after && fault.drop) {
    if (counted && bucket) bucket.used += 1;
    record(hub, hubReq, match, 0, req, receivedAt, receivedAtHr);
    req.socket.destroy();
    return;
  }
  if (fault?.after && fault.status) response = errorResponse(new HubError(fault.status, fault.message));

  let status = response.status;
  let payload: string | Buffer | undefined;
  Object.assign(headers, response.headers ?? {});
  if (response.raw !== undefined) {
    payload = response.raw;
    headers["Content-Type"] ??= "text/plain; charset=utf-8";
  } else if (response.body !== undefined && status !== 204) {
    payload = serialise(response.body);
    headers["Content-Type"] = "application/json; charset=utf-8";
  }
  if (payload !== undefined && (method === "GET" || method === "HEAD") && status === 200) {
    const identity = hubReq.auth.kind === "none" ? "" : `${hubReq.auth.kind}:${JSON.stringify(hubReq.auth)}`;
    const etag = etagOf(
      identity + (req.headers.accept ?? ""),
      typeof payload === "string" ? payload : payload.toString("base64"),
    );
    headers.ETag = etag;
    headers["Cache-Control"] =
      hubReq.auth.kind === "none" ? "public, max-age=60, s-maxage=60" : "private, max-age=60, s-maxage=60";
    // A conditional request answered 304 does not count against the rate limit.
    if (etagMatches(req.headers["if-none-match"], etag)) {
      status = 304;
      payload = undefined;
      counted = false;
    }
  } else {
    headers["Cache-Control"] ??= "no-cache";
  }
  if (counted && bucket) {
    bucket.used += 1;
    Object.assign(headers, hub.rateLimiter.headers(bucket));
  }
  headers.Status = statusLine(status);
  const body =
    payload === undefined || method === "HEAD"
      ? undefined
      : typeof payload === "string"
        ? Buffer.from(payload, "utf8")
        : payload;
  headers["Content-Length"] = String(body?.length ?? 0);
  if (logged) record(hub, hubReq, match, status, req, receivedAt, receivedAtHr);
  res.writeHead(status, headers);
  res.end(body);
}

/** Requests the hub remembers (the newest): about 300 bytes each. */
export const MAX_REQUEST_RECORDS = 50_000;

function record(
  hub: SandboxHub,
  req: HubRequest,
  match: RouteMatch | undefined,
  status: number,
  raw: IncomingMessage,
  receivedAt: number,
  receivedAtHr: number,
): void {
  appendBounded(
    hub.requests,
    {
      method: req.method,
      path: req.path,
      query: req.query.toString(),
      route: match?.route.pattern,
      status,
      auth: req.auth.kind,
      authorization: raw.headers.authorization !== undefined,
      userAgent: raw.headers["user-agent"],
      accept: raw.headers.accept,
      origin: `http://127.0.0.1:${raw.socket.localPort}`,
      at: Date.now(),
      receivedAt,
      receivedAtHr,
    },
    MAX_REQUEST_RECORDS,
  );
}
