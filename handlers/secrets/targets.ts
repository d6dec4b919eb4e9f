// The vocabulary of a sync: where a secret or variable lives (its scope) and the stable
// key that names one target across policy, API reads and Steward's records.
import type { Visibility } from "./policy.js";

export type Kind = "secret" | "variable";

export type Scope =
  { level: "org" } | { level: "repo"; repo: string } | { level: "env"; repo: string; environment: string };

export interface RepoRef {
  id: number;
  name: string;
  archived?: boolean;
}

/** What the policy wants at one target. Secrets carry their source, never the value. */
export interface DesiredTarget {
  key: string;
  kind: Kind;
  scope: Scope;
  name: string;
  /** Secrets: `env:NAME` / `file:/path`. */
  from?: string;
  /** Variables: the literal value. */
  value?: string;
  /** Organisation targets only. */
  visibility?: Visibility;
  /** Organisation targets with visibility `selected`: repository ids, sorted. */
  selectedRepositoryIds?: number[];
}

/** What the API says is there. Secrets' values are unreadable; variables' are readable. */
export interface ActualTarget {
  key: string;
  kind: Kind;
  scope: Scope;
  name: string;
  updatedAt: string;
  value?: string;
  visibility?: Visibility;
  selectedRepositoryIds?: number[];
}

/** What Steward remembers about a target it wrote (never the value). */
export interface TargetRecord {
  kind: Kind;
  scope: Scope;
  name: string;
  /** HMAC of the value written. */
  fingerprint: string;
  /**
   * Remote `updated_at` after Steward's last write: the drift baseline. Empty until known; the
   * next list read supplies it unless it is later than `serverWrittenAt` (then it is drift).
   */
  remoteUpdatedAt: string;
  /** The API's `Date` when it answered Steward's write (the server's clock, like `updated_at`). */
  serverWrittenAt?: string;
  /** True when Steward's write created the target (only those are ever pruned). */
  created: boolean;
  writtenAt: string;
}

export function scopeKey(scope: Scope): string {
  switch (scope.level) {
    case "org":
      return "org";
    case "repo":
      return `repo/${scope.repo.toLowerCase()}`;
    case "env":
      return `env/${scope.repo.toLowerCase()}/${encodeURIComponent(scope.environment)}`;
  }
}

export function targetKey(kind: Kind, scope: Scope, name: string): string {
  return `${kind}/${scopeKey(scope)}/${name.toUpperCase()}`;
}

/** Human label of a scope for tables: `org`, `repo web`, `env web/production`. */
export function scopeLabel(scope: Scope): string {
  switch (scope.level) {
    case "org":
      return "org";
    case "repo":
      return `repo ${scope.repo}`;
    case "env":
      return `env ${scope.repo}/${scope.environment}`;
  }
}

export function scopeRepo(scope: Scope): string | undefined {
  return scope.level === "org" ? undefined : scope.repo;
}
