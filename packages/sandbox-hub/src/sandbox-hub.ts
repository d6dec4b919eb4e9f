// The hub's shared state and the `Hub` contract domain modules build on: clock, ids,
// accounts, repository contents, pull requests, credentials, limits, faults, webhooks.
import { randomBytes, type KeyObject } from "node:crypto";
import { Accounts } from "./accounts/state.js";
import { installationJson, orgJson, ownerJson, repoJson, type AccountSummary } from "./accounts/json.js";
import { SandboxClock, formatTimestamp } from "./core/clock.js";
import { EffectsLog } from "./core/effects.js";
import { notFound } from "./core/errors.js";
import { FaultRules } from "./core/faults.js";
import { paginate } from "./core/pagination.js";
import { seededRandom } from "./core/random.js";
import { RateLimiter } from "./core/ratelimit.js";
import { LoginAttempts, TokenStore, type TokenFormat } from "./core/tokens.js";
import {
  HubError,
  type AuthInfo,
  type DeliveryRecord,
  type Hub,
  type HubEvent,
  type HubRequest,
  type HubResponse,
  type Installation,
  type Org,
  type Repo,
} from "./core/types.js";
import { RepoGit } from "./git/store.js";
import type { PullRequest } from "./pulls/model.js";
import { Deliverer, type HookConfig } from "./webhooks/deliverer.js";

export interface RequestRecord {
  method: string;
  path: string;
  /** Query string without the leading `?`. */
  query: string;
  /** The matched route pattern, when one matched. */
  route: string | undefined;
  status: number;
  auth: AuthInfo["kind"];
  /** Whether an Authorization header was sent (never its value). */
  authorization: boolean;
  userAgent: string | undefined;
  /** The `Accept` header sent (the media type a client asks for). */
  accept: string | undefined;
  /** The listener's origin: the API's (`url`) or the storage host's (`blobUrl`). */
  origin: string;
  /** When the answer was sent (epoch ms). */
  at: number;
  /** When the request arrived (epoch ms): what request spacing is measured by. */
  receivedAt: number;
  /**
   * When the request arrived, on this process's monotonic clock (`performance.now()`, fractions of
   * a millisecond): for latencies measured against stamps taken in the same process.
   */
  receivedAtHr: number;
}

export interface HubSettings {
  appId: number;
  appSlug: string;
  appName: string;
  publicKey: KeyObject;
  hook: HookConfig;
  rateLimit: number;
  randomSeed: number;
  loginAttempts: { max: number; windowMs: number };
  now?: Date;
  /** Installation tokens: format (default classic, 40 characters) and lifetime (default one hour). */
  tokens?: { format?: TokenFormat; ttlMs?: number };
}

export class SandboxHub implements Hub {
  readonly clock: SandboxClock;
  readonly accounts: Accounts;
  readonly gits = new Map<number, RepoGit>();
  readonly pulls = new Map<number, PullRequest[]>();
  readonly tokens = new TokenStore();
  readonly loginAttempts: LoginAttempts;
  readonly rateLimiter: RateLimiter;
  readonly faults: FaultRules;
  readonly deliverer: Deliverer;
  readonly requests: RequestRecord[] = [];
  readonly effects: EffectsLog;
  readonly hook: HookConfig;
  readonly tokenFormat: TokenFormat;
  readonly tokenTtlMs: number;
  readonly appId: number;
  /** Re-defined by an app manifest conversion (accounts/manifests.ts). */
  appSlug: string;
  appName: string;
  appPublicKey: KeyObject;
  readonly hookId: number;
  readonly appCreatedAt: string;
  baseUrl = "";
  /** The storage host's origin (a listener of its own): where signed URLs point. */
  blobBaseUrl = "";
  private idSeq = 1000;
  private readonly blobs = new Map<string, { raw: string | Buffer; expiresAt: number; contentType: string }>();
  private readonly listeners = new Set<(e: HubEvent) => void>();

  constructor(settings: HubSettings) {
    this.clock = new SandboxClock(settings.now);
    this.appId = settings.appId;
    this.tokenFormat = settings.tokens?.format ?? "classic";
    this.tokenTtlMs = settings.tokens?.ttlMs ?? 60 * 60 * 1000;
    this.appSlug = settings.appSlug;
    this.appName = settings.appName;
    this.appPublicKey = settings.publicKey;
    this.appCreatedAt = this.timestamp();
    this.hook = settings.hook;
    this.effects = new EffectsLog(() => this.timestamp());
    this.hookId = this.nextId();
    this.accounts = new Accounts({
      nextId: () => this.nextId(),
      nodeId: (k, id) => this.nodeId(k, id),
      timestamp: () => this.timestamp(),
    });
    this.loginAttempts = new LoginAttempts(settings.loginAttempts.max, settings.loginAttempts.windowMs);
    this.rateLimiter = new RateLimiter((key) =>
      key.startsWith("installation:") ? settings.rateLimit : key.startsWith("ip:") ? 60 : 5000,
    );
    this.faults = new FaultRules(seededRandom(settings.randomSeed));
    this.deliverer = new Deliverer({
      hookId: this.hookId,
      appId: this.appId,
      config: this.hook,
      now: () => this.now(),
      timestamp: (d) => this.timestamp(d),
      nextId: () => this.nextId(),
    });
  }

  // ---- clock and ids ----
  now(): Date {
    return this.clock.now();
  }
  timestamp(date?: Date): string {
    return formatTimestamp(date ?? this.now());
  }
  nextId(): number {
    return ++this.idSeq;
  }
  nodeId(kind: string, id: number): string {
    return `${kind}${Buffer.from(`${kind}:${id}`).toString("base64url")}`;
  }

  // ---- accounts ----
  org(login: string): Org | undefined {
    return this.accounts.org(login);
  }
  user(login: string) {
    return this.accounts.user(login);
  }
  repoById(id: number): Repo | undefined {
    return this.accounts.repos.get(id);
  }
  reposOf(owner: string): Repo[] {
    return this.accounts.reposOf(owner);
  }
  installationFor(repo: Repo): Installation | undefined {
    const inst = this.accounts.installationOn(repo.owner);
    return inst && this.accounts.reaches(inst, repo) ? inst : undefined;
  }
  installationOf(req: HubRequest): Installation | undefined {
    return req.auth.kind === "installation" ? this.accounts.installations.get(req.auth.installationId) : undefined;
  }

  /** Whether the request's credential reaches the repository (outside reach answers 404, never 403). */
  canSee(req: HubRequest, repo: Repo): boolean {
    const auth = req.auth;
    switch (auth.kind) {
      case "installation": {
        const inst = this.accounts.installations.get(auth.installationId);
        const token = this.tokens.lookup(auth.token);
        const narrowed = token?.kind === "installation" ? token.repositoryIds : undefined;
        return !!inst && this.accounts.reaches(inst, repo) && (!narrowed || narrowed.includes(repo.id));
      }
      case "user":
        return this.accounts.userReaches(repo, auth.login);
      case "app":
        return !!this.installationFor(repo);
      case "none":
        return !repo.private;
    }
  }

  requireRepo(req: HubRequest, owner: string, name: string): Repo {
    const repo = this.accounts.repoByName(owner, name);
    if (repo) {
      if (!this.canSee(req, repo)) throw notFound();
      return repo;
    }
    const moved = this.accounts.repoByPreviousName(owner, name);
    if (moved && this.canSee(req, moved)) {
      const rest = req.path.split("/").slice(4).join("/");
      const query = req.query.toString();
      const location = `${req.baseUrl}/repositories/${moved.id}${rest ? `/${rest}` : ""}${query ? `?${query}` : ""}`;
      const status = req.method === "GET" || req.method === "HEAD" ? 301 : 307;
      throw new HubError(status, "Moved Permanently", undefined, { Location: location });
    }
    throw notFound();
  }

  requireOrg(req: HubRequest, login: string): Org {
    const org = this.accounts.org(login);
    if (!org) throw notFound();
    const auth = req.auth;
    const inReach =
      auth.kind === "installation"
        ? this.accounts.installations.get(auth.installationId)?.account.toLowerCase() === org.login.toLowerCase()
        : auth.kind === "user"
          ? this.accounts.isMember(org.login, auth.login)
          : auth.kind === "app"
            ? !!this.accounts.installationOn(org.login)
            : false;
    if (!inReach) throw notFound();
    return org;
  }

  accountSummary(login: string): AccountSummary {
    const acc = this.accounts.account(login);
    if (!acc) throw new Error(`no account "${login}"`);
    return acc;
  }

  repoJson(repo: Repo): Record<string, unknown> {
    let parent: Record<string, unknown> | undefined;
    const parentRepo = this.forkParent(repo);
    if (parentRepo) parent = repoJson(this.baseUrl, parentRepo, this.accountSummary(parentRepo.owner));
    return repoJson(this.baseUrl, repo, this.accountSummary(repo.owner), parent ? { forkParent: parent } : {});
  }
  userJson(login: string): Record<string, unknown> {
    const acc = this.accounts.account(login);
    if (!acc) {
      // Unknown logins (e.g. a bot actor) still render as a full summary.
      return ownerJson(this.baseUrl, { id: 0, login, node_id: this.nodeId("U_", 0), type: "User" });
    }
    return ownerJson(this.baseUrl, acc);
  }
  orgJson(login: string): Record<string, unknown> | null {
    const org = this.accounts.org(login);
    return org ? orgJson(this.baseUrl, org) : null;
  }
  installationJson(inst: Installation): Record<string, unknown> {
    return installationJson(this.baseUrl, inst, this.accountSummary(inst.account), this.appSlug);
  }
  /** The app as a bot user (sender of the app's own actions). */
  botLogin(): string {
    return `${this.appSlug}[bot]`;
  }

  /** Fork parent per fork repository id. */
  readonly forkParents = new Map<number, number>();

  forkParent(repo: Repo): Repo | undefined {
    const parentId = this.forkParents.get(repo.id);
    return parentId === undefined ? undefined : this.repoById(parentId);
  }

  // ---- conventions ----
  paginate(
    req: HubRequest,
    items: unknown[],
    opts?: { maxPerPage?: number; wrap?: string; totalCountKey?: string },
  ): HubResponse {
    return paginate(req, items, opts);
  }

  // ---- contents ----
  git(repo: Repo): RepoGit {
    let g = this.gits.get(repo.id);
    if (!g) {
      g = new RepoGit();
      this.gits.set(repo.id, g);
    }
    return g;
  }
  resolveRef(repo: Repo, ref: string): string | undefined {
    return this.git(repo).resolve(ref, repo.default_branch);
  }
  readFile(repo: Repo, path: string, ref?: string): string | undefined {
    const sha = this.git(repo).resolve(ref, repo.default_branch);
    return sha ? this.git(repo).read(sha, path)?.toString("utf8") : undefined;
  }

  // ---- webhooks ----
  deliver(
    event: string,
    payload: Record<string, unknown>,
    opts: { installationId?: number } = {},
  ): Promise<DeliveryRecord | undefined> {
    let inst = opts.installationId !== undefined ? this.accounts.installations.get(opts.installationId) : undefined;
    if (!inst && opts.installationId === undefined) {
      const repoId = (payload.repository as { id?: number } | undefined)?.id;
      const repo = repoId === undefined ? undefined : this.repoById(repoId);
      inst = repo ? this.installationFor(repo) : undefined;
    }
    if (!inst) return Promise.resolve(undefined);
    // Suspending an installation blocks its deliveries (seeds, Events rule 1).
    if (inst.suspended_at && !(event === "installation" && payload.action === "suspend"))
      return Promise.resolve(undefined);
    if (inst.events.length > 0 && !inst.events.includes(event) && !event.startsWith("installation"))
      return Promise.resolve(undefined);
    const body = {
      ...payload,
      installation: payload.installation ?? {
        id: inst.id,
        node_id: this.nodeId("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u", inst.id),
      },
    };
    return this.deliverer.send(event, body, { installationId: inst.id });
  }

  // ---- blobs behind short-lived URLs ----
  signedUrl(raw: string | Buffer, ttlMs: number, contentType = "text/plain; charset=utf-8"): string {
    const token = randomBytes(16).toString("hex");
    this.blobs.set(token, { raw, expiresAt: this.now().getTime() + ttlMs, contentType });
    return `${this.blobBaseUrl || this.baseUrl}/_sandbox/blobs/${token}?sig=${randomBytes(8).toString("hex")}`;
  }
  blob(token: string): { raw: string | Buffer; contentType: string } | "expired" | undefined {
    const b = this.blobs.get(token);
    if (!b) return undefined;
    return this.now().getTime() > b.expiresAt ? "expired" : b;
  }

  // ---- effects and events ----
  /** Record an effect; `details.by`, when given, is who asked (else the hub itself). */
  effect(kind: string, details: Record<string, unknown>): void {
    const { by, ...detail } = details;
    this.effects.record(kind, typeof by === "string" ? by : "hub", detail);
  }
  subscribe(listener: (event: HubEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  emit(event: HubEvent): void {
    for (const l of this.listeners) {
      try {
        l(event);
      } catch {
        // A listener's failure must not break the push or pull request that caused it.
      }
    }
  }
}
