// Contracts inside the sandbox hub. The hub core (server, router, conventions, auth,
// rate limits, accounts, contents, webhooks, control surface) implements `Hub`; each
// domain module (actions, deployments, checks, secrets, variables) registers its
// routes through `Router` and keeps its own state, reaching shared state through `Hub`.
import type { EffectsLog } from "./effects.js";
import type { IncomingHttpHeaders } from "node:http";

export interface Org {
  id: number;
  login: string;
  node_id: string;
}

export interface User {
  id: number;
  login: string;
  node_id: string;
  type: "User" | "Bot";
}

export interface Repo {
  id: number;
  node_id: string;
  name: string;
  /** Owner login (organisation or user). */
  owner: string;
  private: boolean;
  default_branch: string;
  fork: boolean;
  archived: boolean;
  created_at: string;
  updated_at: string;
  pushed_at: string;
  /** Names this repository had before a rename: requests to them answer 301. */
  previous_names: string[];
}

export interface Installation {
  id: number;
  app_id: number;
  /** Organisation (or user) login it is installed on. */
  account: string;
  permissions: Record<string, "read" | "write">;
  repository_selection: "all" | "selected";
  /** Repository ids when selection is `selected`. */
  repository_ids: number[];
  suspended_at: string | null;
  events: string[];
}

export type AuthInfo =
  | { kind: "none" }
  | { kind: "app"; appId: number }
  | { kind: "installation"; installationId: number; token: string }
  | { kind: "user"; login: string; token: string };

export interface HubRequest {
  method: string;
  /** Path without query string, e.g. `/repos/acme/web/actions/runs/5`. */
  path: string;
  /** Named path parameters, URL-decoded (`environment_name` with `%2F` becomes `/`). */
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body (object), or undefined when there was none. The core answers 400 for bad JSON. */
  body: Record<string, unknown> | undefined;
  auth: AuthInfo;
  /** Absolute base URL of the hub, e.g. `http://127.0.0.1:4010`. */
  baseUrl: string;
}

export interface HubResponse {
  status: number;
  /** JSON body; serialised by the core (undefined fields become null is the route's job). */
  body?: unknown;
  /** Raw body for non-JSON answers (e.g. a log file, raw file contents). */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

/** Thrown by routes and helpers; the core turns it into the seeds' error body. */
export class HubError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors?: { resource: string; field: string; code: string; message?: string }[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export type RouteHandler = (req: HubRequest) => HubResponse | Promise<HubResponse>;

export interface RouteOptions {
  /**
   * Who may call: `app` needs an app JWT; `installation` an installation token (or a user token
   * where the route allows users); `user` a user token (e.g. a required reviewer); `any` any valid
   * credential; `none` no credential needed (e.g. a log download URL). Default `installation`.
   */
  auth?: "app" | "installation" | "user" | "installation-or-user" | "any" | "none";
  /** Installation permission needed, e.g. `{ checks: "write" }`. */
  permission?: Record<string, "read" | "write">;
}

export interface Router {
  /** Pattern uses `{name}` segments, e.g. `/repos/{owner}/{repo}/actions/runs/{run_id}`. */
  add(method: string, pattern: string, handler: RouteHandler, options?: RouteOptions): void;
}

export interface DeliveryRecord {
  /** The delivery's GUID (`X-GitHub-Delivery`). */
  guid: string;
  /** Numeric id used by `GET /app/hook/deliveries`. */
  id: number;
  event: string;
  action: string | null;
  installation_id: number | null;
  repository_id: number | null;
  delivered_at: string;
  redelivery: boolean;
  /** HTTP status the app answered, 0 when the connection failed. */
  status_code: number;
  status: string;
  duration: number;
  payload: Record<string, unknown>;
}

export interface Hub {
  /** The sandbox clock (controllable: tests move it forward). */
  now(): Date;
  /** `YYYY-MM-DDTHH:MM:SSZ`. */
  timestamp(date?: Date): string;
  /** Next id of a global, monotonically increasing sequence. */
  nextId(): number;
  /** Random hex id. */
  nodeId(kind: string, id: number): string;

  readonly baseUrl: string;
  readonly appId: number;

  org(login: string): Org | undefined;
  user(login: string): User | undefined;
  /** Resolve a repository for the caller: 404 when missing or outside the token's reach; HubError 301 on a renamed name. */
  requireRepo(req: HubRequest, owner: string, repo: string): Repo;
  repoById(id: number): Repo | undefined;
  reposOf(owner: string): Repo[];
  /** The installation on the repository's owner (if any). */
  installationFor(repo: Repo): Installation | undefined;
  /** The installation a request's token belongs to, or undefined. */
  installationOf(req: HubRequest): Installation | undefined;
  /** Full repository object as the API returns it (every field present, nulls not omitted). */
  repoJson(repo: Repo): Record<string, unknown>;
  userJson(login: string): Record<string, unknown>;

  /** Answer a list with `per_page` (default 30, max `maxPerPage`) and `page`, with a `Link` header. */
  paginate(
    req: HubRequest,
    items: unknown[],
    opts?: { maxPerPage?: number; wrap?: string; totalCountKey?: string },
  ): HubResponse;

  /** Send a webhook delivery for an installation to the app's webhook URL (recorded; async). */
  deliver(
    event: string,
    payload: Record<string, unknown>,
    opts?: { installationId?: number },
  ): Promise<DeliveryRecord | undefined>;

  /** Every request the hub received (method, path, status, auth kind), for tests to judge. */
  readonly requests: { method: string; path: string; status: number; auth: AuthInfo["kind"]; at: number }[];

  /** A short-lived URL served by the hub that needs no Authorization (e.g. log downloads). */
  signedUrl(raw: string | Buffer, ttlMs: number, contentType?: string): string;

  // ---- Added by the hub core (optional helpers for domain modules) ----
  /** Resolve an organisation for the caller: 404 when missing or outside the credential's reach. */
  requireOrg?(req: HubRequest, login: string): Org;
  /** Resolve a branch, tag, `refs/...` name or (abbreviated) sha to a commit sha. */
  resolveRef?(repo: Repo, ref: string): string | undefined;
  /** The repository a fork was forked from, or undefined when `repo` is not a fork. */
  forkParent?(repo: Repo): Repo | undefined;
  /** A file's text at a ref (default branch when omitted), or undefined. */
  readFile?(repo: Repo, path: string, ref?: string): string | undefined;
  /** Organisation summary as payloads carry it (`organization`), or null when `login` is not an organisation. */
  orgJson?(login: string): Record<string, unknown> | null;
  /** The effects log tests and the demo inspect (domain modules record into it). */
  readonly effects: EffectsLog;
  /** Record an effect; `details.by`, when given, is who asked (else the hub itself). */
  effect(kind: string, details: Record<string, unknown>): void;
  /** Be told about pushes and pull request changes (e.g. to start workflow runs). Returns an unsubscribe function. */
  subscribe?(listener: (event: HubEvent) => void): () => void;
}

/** Things that happened in the hub that domain modules may react to. */
export type HubEvent =
  | { kind: "push"; repo: Repo; ref: string; before: string; after: string; pusher: string }
  | {
      kind: "pull_request";
      action: string;
      repo: Repo;
      number: number;
      head_sha: string;
      head_ref: string;
      base_ref: string;
    };
