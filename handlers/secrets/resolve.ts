// Policy x the installation's repositories -> the targets that should exist. Pure.
import { matchesAny } from "../../src/index.js";
import type { OrgPlacement, SecretsPolicy } from "./policy.js";
import { targetKey, type DesiredTarget, type Kind, type RepoRef, type Scope } from "./targets.js";

/** Names and globs match a repository name case-insensitively (GitHub names are). */
export function repoMatches(globs: readonly string[], name: string): boolean {
  return (
    matchesAny(globs, name) ||
    matchesAny(
      globs.map((g) => g.toLowerCase()),
      name.toLowerCase(),
    )
  );
}

interface Entry {
  org?: OrgPlacement;
  repositories?: string[];
  share?: "org";
  environments?: Record<string, string[]>;
}

function placements(
  kind: Kind,
  name: string,
  entry: Entry,
  repos: readonly RepoRef[],
  payload: Pick<DesiredTarget, "from" | "value">,
): DesiredTarget[] {
  const upper = name.toUpperCase();
  const out: DesiredTarget[] = [];
  const add = (scope: Scope, extra: Partial<DesiredTarget> = {}) =>
    out.push({ key: targetKey(kind, scope, upper), kind, scope, name: upper, ...payload, ...extra });

  const idsOf = (list: readonly RepoRef[], globs: readonly string[]) =>
    list
      .filter((r) => repoMatches(globs, r.name))
      .map((r) => r.id)
      .sort((a, b) => a - b);
  if (entry.org) {
    const extra: Partial<DesiredTarget> = { visibility: entry.org.visibility };
    if (entry.org.visibility === "selected") extra.selectedRepositoryIds = idsOf(repos, entry.org.repositories ?? []);
    add({ level: "org" }, extra);
  }
  // Archived repositories are read-only: writing to them can only fail.
  const writable = repos.filter((r) => !r.archived);
  if (entry.repositories?.length && entry.share === "org" && !entry.org) {
    // The same repositories as the copies would reach, through one organisation target.
    const ids = idsOf(writable, entry.repositories);
    if (ids.length) add({ level: "org" }, { visibility: "selected", selectedRepositoryIds: ids });
  } else if (entry.repositories?.length) {
    for (const repo of writable)
      if (repoMatches(entry.repositories, repo.name)) add({ level: "repo", repo: repo.name });
  }
  for (const [environment, globs] of Object.entries(entry.environments ?? {})) {
    for (const repo of writable) if (repoMatches(globs, repo.name)) add({ level: "env", repo: repo.name, environment });
  }
  return out;
}

/** Every target the policy asks for, keyed; later entries never silently override earlier ones. */
export function resolveDesired(policy: SecretsPolicy, repos: readonly RepoRef[]): DesiredTarget[] {
  const all: DesiredTarget[] = [];
  for (const [name, entry] of Object.entries(policy.secrets ?? {})) {
    all.push(...placements("secret", name, entry, repos, { from: entry.from }));
  }
  for (const [name, entry] of Object.entries(policy.variables ?? {})) {
    all.push(...placements("variable", name, entry, repos, { value: String(entry.value) }));
  }
  return all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
