// Driving and inspecting the hub from tests, the demo and scripts: seed accounts,
// push, open pull requests, move the clock, set limits and faults, read what happened.
import type { Fault } from "./core/faults.js";
import type { DocumentedLimits, SecondaryLimit } from "./core/ratelimit.js";
import type { DeliveryRecord, Installation, Org, Repo, User } from "./core/types.js";
import { pushFiles, type PushOptions } from "./git/push.js";
import { mergePullRequest } from "./pulls/merge.js";
import { commentOnIssue, openIssue } from "./issues/simulate.js";
import { closePullRequest, openPullRequest, pushToPullRequest, type OpenPullRequestOptions } from "./pulls/ops.js";
import type { Effect } from "./core/effects.js";
import type { RequestRecord, SandboxHub } from "./sandbox-hub.js";
import { destroyMergeGroup, enqueuePullRequest, type DestroyReason, type MergeGroup } from "./pulls/merge-queue.js";
import type { StoredDelivery } from "./webhooks/deliverer.js";

export interface InstallOptions {
  permissions?: Record<string, "read" | "write">;
  /** Repository names (selection `selected`) or `all` (default). */
  repositories?: string[] | "all";
  /** Events the app subscribes to; empty means every event. */
  events?: string[];
}

export class Control {
  constructor(private readonly hub: SandboxHub) {}

  // ---- accounts ----
  createOrg(login: string, opts: { members?: string[]; owners?: string[] } = {}): Org {
    const org = this.hub.accounts.createOrg(login);
    for (const m of opts.members ?? []) this.hub.accounts.createUser(m, { orgs: [org.login] });
    for (const o of opts.owners ?? []) {
      this.hub.accounts.createUser(o);
      this.hub.accounts.addOwner(org.login, o);
    }
    return org;
  }

  /** From now on only `logins` (and the organisation's owners) among its members reach the repository. */
  restrictRepo(owner: string, name: string, logins: string[]): void {
    const repo = this.hub.accounts.repoByName(owner, name);
    if (!repo) throw new Error(`no repository ${owner}/${name}`);
    this.hub.accounts.restrictRepo(repo, logins);
  }

  createUser(login: string, opts: { orgs?: string[] } = {}): User {
    return this.hub.accounts.createUser(login, opts);
  }

  /** A personal access token for the user (stable per user), e.g. a required reviewer's. */
  userToken(login: string): string {
    if (!this.hub.user(login)) throw new Error(`no user "${login}"`);
    return this.hub.tokens.userToken(login);
  }

  /** Create a repository with an initial commit on its default branch (plus `files`). */
  createRepo(opts: {
    owner: string;
    name: string;
    private?: boolean;
    default_branch?: string;
    files?: Record<string, string>;
  }): Repo {
    const repo = this.hub.accounts.createRepo(opts.owner, opts.name, {
      ...(opts.private !== undefined ? { private: opts.private } : {}),
      ...(opts.default_branch ? { default_branch: opts.default_branch } : {}),
    });
    this.hub.git(repo).commit(
      repo.default_branch,
      { "README.md": `# ${opts.name}\n`, ...(opts.files ?? {}) },
      {
        message: "Initial commit",
        author: { name: opts.owner, email: `${opts.owner}@users.noreply.sandbox.local`, login: null },
        date: this.hub.now(),
      },
    );
    return repo;
  }

  renameRepo(owner: string, name: string, newName: string): Repo {
    return this.hub.accounts.renameRepo(owner, name, newName);
  }

  /**
   * Make a repository public or private, as its settings page does; sends `repository.publicized`
   * or `repository.privatized` when the visibility changes.
   */
  setRepoVisibility(owner: string, name: string, visibility: "public" | "private", by: string = owner): Repo {
    const repo = this.hub.accounts.repoByName(owner, name);
    if (!repo) throw new Error(`no repository ${owner}/${name}`);
    const isPrivate = visibility === "private";
    if (repo.private === isPrivate) return repo;
    repo.private = isPrivate;
    repo.updated_at = this.hub.timestamp();
    void this.hub.deliver("repository", {
      action: isPrivate ? "privatized" : "publicized",
      repository: this.hub.repoJson(repo),
      sender: this.hub.userJson(by),
    });
    return repo;
  }

  /** Install the app on an account; sends `installation.created`. */
  install(account: string, opts: InstallOptions = {}): Installation {
    const inst = this.hub.accounts.install(this.hub.appId, account, opts);
    const repos = this.hub.accounts.reposOfInstallation(inst);
    void this.hub.deliver(
      "installation",
      {
        action: "created",
        installation: this.hub.installationJson(inst),
        repositories: repos.map((r) => ({
          id: r.id,
          node_id: r.node_id,
          name: r.name,
          full_name: `${r.owner}/${r.name}`,
          private: r.private,
        })),
        requester: null,
        sender: this.hub.userJson(account),
      },
      { installationId: inst.id },
    );
    return inst;
  }

  /**
   * Install another GitHub App (`slug`, e.g. a third-party CI) on an account and hand out an
   * installation token for it: what it creates over the API (check runs) belongs to that app and
   * renders its slug. Sends no deliveries; the account's installation stays the hub's own app's.
   */
  installOtherApp(
    account: string,
    o: { slug: string; permissions?: Record<string, "read" | "write">; repositories?: string[] | "all" },
  ): { appId: number; installationId: number; token: string } {
    const appId = 2_000_000 + this.hub.nextId();
    this.hub.accounts.otherApps.set(appId, o.slug);
    const permissions = o.permissions ?? { checks: "write" };
    const inst = this.hub.accounts.install(appId, account, {
      permissions,
      ...(o.repositories ? { repositories: o.repositories } : {}),
    });
    const token = this.hub.tokens.issueInstallationToken(
      {
        installationId: inst.id,
        expiresAt: new Date(this.hub.now().getTime() + this.hub.tokenTtlMs),
        permissions: inst.permissions,
        repositoryIds: undefined,
      },
      "classic",
      appId,
    );
    return { appId, installationId: inst.id, token: token.token };
  }

  suspend(installationId: number): void {
    const inst = this.requireInstallation(installationId);
    inst.suspended_at = this.hub.timestamp();
    void this.hub.deliver(
      "installation",
      { action: "suspend", installation: this.hub.installationJson(inst), sender: this.hub.userJson(inst.account) },
      { installationId },
    );
    this.hub.effect("installation.suspended", { by: "control", installation_id: installationId });
  }

  unsuspend(installationId: number): void {
    const inst = this.requireInstallation(installationId);
    inst.suspended_at = null;
    void this.hub.deliver(
      "installation",
      { action: "unsuspend", installation: this.hub.installationJson(inst), sender: this.hub.userJson(inst.account) },
      { installationId },
    );
    this.hub.effect("installation.unsuspended", { by: "control", installation_id: installationId });
  }

  installation(account: string): Installation | undefined {
    return this.hub.accounts.installationOn(account);
  }

  repo(owner: string, name: string): Repo | undefined {
    return this.hub.accounts.repoByName(owner, name);
  }

  setWebhookUrl(url: string | undefined, opts: { contentType?: "json" | "form"; secret?: string } = {}): void {
    this.hub.hook.url = url;
    if (opts.contentType) this.hub.hook.content_type = opts.contentType;
    if (opts.secret !== undefined) this.hub.hook.secret = opts.secret;
  }

  /** Where deliveries go (the app's webhook URL), or null: how a client of the control surface finds the app. */
  webhookUrl(): string | null {
    return this.hub.hook.url ?? null;
  }

  // ---- contents ----
  pushFiles(opts: PushOptions): { sha: string } {
    const r = pushFiles(this.hub, opts);
    return { sha: r.sha };
  }

  readFile(owner: string, repo: string, path: string, ref?: string): string | undefined {
    const r = this.hub.accounts.repoByName(owner, repo);
    return r ? this.hub.readFile(r, path, ref) : undefined;
  }

  openPullRequest(opts: OpenPullRequestOptions): { number: number; head_sha: string } {
    return openPullRequest(this.hub, opts);
  }

  pushToPullRequest(opts: {
    owner: string;
    repo: string;
    number: number;
    files: Record<string, string | null>;
    message?: string;
  }): { sha: string } {
    return pushToPullRequest(this.hub, opts);
  }

  closePullRequest(opts: { owner: string; repo: string; number: number; merge?: boolean }): void {
    closePullRequest(this.hub, opts);
  }

  /** A user opens an issue (`issues.opened`); the author defaults to `contributor`. */
  openIssue(opts: { owner: string; repo: string; title: string; body?: string; author?: string }): { number: number } {
    return openIssue(this.hub, opts);
  }

  /** A user comments on an issue or pull request (`issue_comment.created`). */
  commentOnIssue(opts: { owner: string; repo: string; number: number; body: string; author?: string }): { id: number } {
    return commentOnIssue(this.hub, opts);
  }

  /** Merge as on the site: the head's changes land on the base branch (`push`), then `pull_request.closed` merged. */
  mergePullRequest(opts: { owner: string; repo: string; number: number; by?: string }): { sha: string } {
    return mergePullRequest(this.hub, opts);
  }

  /** Add a pull request to its base branch's merge queue (`merge_group` `checks_requested`). */
  enqueuePullRequest(opts: { owner: string; repo: string; number: number }): MergeGroup {
    return enqueuePullRequest(this.hub, opts);
  }

  /** End a merge group (`merge_group` `destroyed`); `merged` moves the base branch to its head. */
  destroyMergeGroup(group: MergeGroup, reason: DestroyReason): void {
    destroyMergeGroup(this.hub, group, reason);
  }

  // ---- time, limits, faults ----
  setClock(date: Date): void {
    this.hub.clock.set(date);
  }

  advanceClock(ms: number): void {
    this.hub.clock.advance(ms);
  }

  now(): Date {
    return this.hub.now();
  }

  setRateLimit(installationId: number, opts: { limit: number; remaining?: number; resetAt?: Date }): void {
    this.hub.rateLimiter.set(`installation:${installationId}`, this.hub.now(), opts);
  }

  setSecondaryLimit(limit: SecondaryLimit | null): void {
    this.hub.rateLimiter.setSecondary(limit ?? undefined);
  }

  /**
   * Enforce GitHub's documented secondary limits per credential (concurrent requests, points a
   * minute, content-creating requests a minute and an hour), each at GitHub's figure unless given;
   * `null` stops. A refusal answers 403 with Retry-After and records a `hub.secondary-limit` effect.
   */
  enforceDocumentedLimits(limits: Partial<DocumentedLimits> | null = {}): void {
    this.hub.rateLimiter.setDocumented(limits ?? undefined);
  }

  setFault(routePattern: string, fault: Fault): void {
    this.hub.faults.set(routePattern, fault);
  }

  clearFaults(): void {
    this.hub.faults.clear();
  }

  setLoginAttempts(opts: { max?: number; windowMs?: number; reset?: boolean }): void {
    if (opts.max !== undefined) this.hub.loginAttempts.max = opts.max;
    if (opts.windowMs !== undefined) this.hub.loginAttempts.windowMs = opts.windowMs;
    if (opts.reset) this.hub.loginAttempts.reset();
  }

  // ---- inspection ----
  deliveries(): StoredDelivery[] {
    return [...this.hub.deliverer.records];
  }

  /** Resolves with the matching deliveries once at least `count` (default 1) were attempted. */
  waitForDeliveries(
    predicate: (d: DeliveryRecord) => boolean,
    opts: { count?: number; timeoutMs?: number } = {},
  ): Promise<StoredDelivery[]> {
    const count = opts.count ?? 1;
    const matching = () => this.hub.deliverer.records.filter(predicate);
    return new Promise((resolve, reject) => {
      const done = () => {
        const found = matching();
        if (found.length < count) return false;
        clearTimeout(timer);
        off();
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        off();
        reject(new Error(`timed out waiting for ${count} matching deliveries (have ${matching().length})`));
      }, opts.timeoutMs ?? 10_000);
      const off = this.hub.deliverer.onRecord(() => void done());
      done();
    });
  }

  /** Every delivery queued so far has been attempted. */
  settled(): Promise<void> {
    return this.hub.deliverer.settled();
  }

  requests(): RequestRecord[] {
    return [...this.hub.requests];
  }

  /** What happened, in order: pushes, pull requests, suspensions, and what domains record. */
  get effects(): Effect[] {
    return this.hub.effects.entries;
  }

  effect(kind: string, details: Record<string, unknown>): void {
    this.hub.effect(kind, details);
  }

  private requireInstallation(id: number): Installation {
    const inst = this.hub.accounts.installations.get(id);
    if (!inst) throw new Error(`no installation ${id}`);
    return inst;
  }
}
