// Organisations, users, repositories and app installations: the hub's account state.
import type { Installation, Org, Repo, User } from "../core/types.js";

export interface AccountIds {
  nextId(): number;
  nodeId(kind: string, id: number): string;
  timestamp(): string;
}

export class Accounts {
  readonly orgs = new Map<string, Org>();
  readonly users = new Map<string, User>();
  readonly repos = new Map<number, Repo>();
  readonly installations = new Map<number, Installation>();
  /** org login (lower case) -> member logins (lower case). */
  readonly members = new Map<string, Set<string>>();
  /** org login (lower case) -> owner logins (lower case): membership role `admin`. */
  readonly owners = new Map<string, Set<string>>();
  /** repo id -> the only member logins (lower case) with access besides owners; absent = every member. */
  readonly restricted = new Map<number, Set<string>>();
  /**
   * Apps other than the hub's own, installed to act on repositories (app id -> slug): e.g. another
   * CI app creating check runs. Their installations are never the account's installation of the app.
   */
  readonly otherApps = new Map<number, string>();

  constructor(private readonly ids: AccountIds) {}

  createOrg(login: string): Org {
    const existing = this.org(login);
    if (existing) return existing;
    const id = this.ids.nextId();
    const org: Org = { id, login, node_id: this.ids.nodeId("O_", id) };
    this.orgs.set(login.toLowerCase(), org);
    return org;
  }

  createUser(login: string, opts: { type?: "User" | "Bot"; orgs?: string[] } = {}): User {
    let user = this.user(login);
    if (!user) {
      const id = this.ids.nextId();
      user = { id, login, node_id: this.ids.nodeId("U_", id), type: opts.type ?? "User" };
      this.users.set(login.toLowerCase(), user);
    }
    for (const org of opts.orgs ?? []) this.addMember(org, login);
    return user;
  }

  addMember(org: string, login: string): void {
    const set = this.members.get(org.toLowerCase()) ?? new Set<string>();
    set.add(login.toLowerCase());
    this.members.set(org.toLowerCase(), set);
  }

  isMember(org: string, login: string): boolean {
    return this.members.get(org.toLowerCase())?.has(login.toLowerCase()) ?? false;
  }

  addOwner(org: string, login: string): void {
    this.addMember(org, login);
    const set = this.owners.get(org.toLowerCase()) ?? new Set<string>();
    set.add(login.toLowerCase());
    this.owners.set(org.toLowerCase(), set);
  }

  isOwner(org: string, login: string): boolean {
    return this.owners.get(org.toLowerCase())?.has(login.toLowerCase()) ?? false;
  }

  /** Only these members (and the organisation's owners) reach the repository from now on. */
  restrictRepo(repo: Repo, logins: string[]): void {
    this.restricted.set(repo.id, new Set(logins.map((l) => l.toLowerCase())));
  }

  /** A user's access: public repositories, their own, and their organisations' unless restricted. */
  userReaches(repo: Repo, login: string): boolean {
    if (repo.owner.toLowerCase() === login.toLowerCase()) return true;
    const only = this.restricted.get(repo.id);
    if (only && this.isMember(repo.owner, login))
      return only.has(login.toLowerCase()) || this.isOwner(repo.owner, login);
    return !repo.private || this.isMember(repo.owner, login);
  }

  org(login: string): Org | undefined {
    return this.orgs.get(login.toLowerCase());
  }

  user(login: string): User | undefined {
    return this.users.get(login.toLowerCase());
  }

  /** An account (organisation or user) by login. */
  account(
    login: string,
  ): { id: number; login: string; node_id: string; type: "Organization" | "User" | "Bot" } | undefined {
    const org = this.org(login);
    if (org) return { ...org, type: "Organization" };
    const user = this.user(login);
    return user ? { id: user.id, login: user.login, node_id: user.node_id, type: user.type } : undefined;
  }

  createRepo(
    owner: string,
    name: string,
    opts: { private?: boolean; default_branch?: string; fork?: boolean } = {},
  ): Repo {
    if (!this.account(owner)) throw new Error(`no account "${owner}"`);
    if (this.repoByName(owner, name)) throw new Error(`repository ${owner}/${name} exists`);
    const id = this.ids.nextId();
    const now = this.ids.timestamp();
    const repo: Repo = {
      id,
      node_id: this.ids.nodeId("R_", id),
      name,
      owner: this.account(owner)!.login,
      private: opts.private ?? false,
      default_branch: opts.default_branch ?? "main",
      fork: opts.fork ?? false,
      archived: false,
      created_at: now,
      updated_at: now,
      pushed_at: now,
      previous_names: [],
    };
    this.repos.set(id, repo);
    return repo;
  }

  repoByName(owner: string, name: string): Repo | undefined {
    const o = owner.toLowerCase();
    const n = name.toLowerCase();
    for (const r of this.repos.values()) if (r.owner.toLowerCase() === o && r.name.toLowerCase() === n) return r;
    return undefined;
  }

  /** The repository that was once called owner/name (renamed since). */
  repoByPreviousName(owner: string, name: string): Repo | undefined {
    const o = owner.toLowerCase();
    const n = name.toLowerCase();
    for (const r of this.repos.values()) {
      if (r.owner.toLowerCase() === o && r.previous_names.some((p) => p.toLowerCase() === n)) return r;
    }
    return undefined;
  }

  renameRepo(owner: string, name: string, newName: string): Repo {
    const repo = this.repoByName(owner, name);
    if (!repo) throw new Error(`no repository ${owner}/${name}`);
    if (this.repoByName(owner, newName)) throw new Error(`repository ${owner}/${newName} exists`);
    repo.previous_names.push(repo.name);
    repo.name = newName;
    repo.updated_at = this.ids.timestamp();
    return repo;
  }

  reposOf(owner: string): Repo[] {
    const o = owner.toLowerCase();
    return [...this.repos.values()].filter((r) => r.owner.toLowerCase() === o);
  }

  install(
    appId: number,
    account: string,
    opts: { permissions?: Record<string, "read" | "write">; repositories?: string[] | "all"; events?: string[] } = {},
  ): Installation {
    const acc = this.account(account);
    if (!acc) throw new Error(`no account "${account}"`);
    const selected = opts.repositories && opts.repositories !== "all" ? opts.repositories : undefined;
    const id = this.ids.nextId();
    const inst: Installation = {
      id,
      app_id: appId,
      account: acc.login,
      permissions: { metadata: "read", ...(opts.permissions ?? {}) },
      repository_selection: selected ? "selected" : "all",
      repository_ids: (selected ?? []).map((name) => {
        const repo = this.repoByName(acc.login, name);
        if (!repo) throw new Error(`no repository ${acc.login}/${name}`);
        return repo.id;
      }),
      suspended_at: null,
      events: opts.events ?? [],
    };
    this.installations.set(id, inst);
    return inst;
  }

  installationOn(account: string): Installation | undefined {
    const a = account.toLowerCase();
    for (const i of this.installations.values())
      if (i.account.toLowerCase() === a && !this.otherApps.has(i.app_id)) return i;
    return undefined;
  }

  /** Whether the installation can see the repository (its account, and selected when selection is `selected`). */
  reaches(inst: Installation, repo: Repo): boolean {
    if (inst.account.toLowerCase() !== repo.owner.toLowerCase()) return false;
    return inst.repository_selection === "all" || inst.repository_ids.includes(repo.id);
  }

  reposOfInstallation(inst: Installation): Repo[] {
    return [...this.repos.values()].filter((r) => this.reaches(inst, r));
  }
}
