// Where a secret or variable lives (repository, organisation, environment), the naming
// rules both share, and which repositories an organisation-level item reaches.
import type { Hub, Repo } from "../core/types.js";
import { HubError } from "../core/types.js";
import type { FieldError } from "../checks/rules.js";

export type ScopeRef =
  { org: string } | { owner: string; repo: string } | { owner: string; repo: string; environment: string };

export type Scope =
  | { kind: "org"; org: string }
  | { kind: "repo"; repoId: number }
  | { kind: "env"; repoId: number; environment: string };

export function scopeKey(scope: Scope): string {
  switch (scope.kind) {
    case "org":
      return `org:${scope.org.toLowerCase()}`;
    case "repo":
      return `repo:${scope.repoId}`;
    case "env":
      return `env:${scope.repoId}:${scope.environment}`;
  }
}

/** Resolve a control-side scope reference (by names) to a scope. */
export function resolveScope(hub: Hub, ref: ScopeRef): Scope {
  if ("org" in ref) return { kind: "org", org: ref.org };
  const repo = hub.reposOf(ref.owner).find((r) => r.name.toLowerCase() === ref.repo.toLowerCase());
  if (!repo) throw new HubError(404, `No repository ${ref.owner}/${ref.repo} in the sandbox`);
  return "environment" in ref
    ? { kind: "env", repoId: repo.id, environment: ref.environment }
    : { kind: "repo", repoId: repo.id };
}

export type Visibility = "all" | "private" | "selected";

/** Secret and variable names: letters, digits and underscores, not starting with a digit or the reserved prefix. */
export function nameProblems(name: string, resource: string, field = "name"): FieldError[] {
  const problem = (message: string): FieldError[] => [{ resource, field, code: "custom", message }];
  if (name.length === 0) return [{ resource, field, code: "missing_field" }];
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    return problem(
      `${field} can only contain alphanumeric characters ([a-z], [A-Z], [0-9]) or underscores (_), and must not start with a number`,
    );
  if (/^GITHUB_/i.test(name)) return problem(`${field} must not start with the GITHUB_ prefix`);
  return [];
}

/** Problems with an organisation-level visibility and repository selection (document 001: ids only with `selected`). */
export function visibilityProblems(
  hub: Hub,
  org: string,
  visibility: unknown,
  ids: unknown,
  resource: string,
  required: boolean,
): FieldError[] {
  const problems: FieldError[] = [];
  if (visibility === undefined) {
    if (required) problems.push({ resource, field: "visibility", code: "missing_field" });
  } else if (!["all", "private", "selected"].includes(visibility as string)) {
    problems.push({ resource, field: "visibility", code: "invalid" });
  }
  if (ids !== undefined) {
    if (!Array.isArray(ids) || !ids.every((i) => Number.isInteger(i)))
      problems.push({ resource, field: "selected_repository_ids", code: "invalid" });
    else if (visibility !== "selected") {
      problems.push({
        resource,
        field: "selected_repository_ids",
        code: "custom",
        message: "selected_repository_ids can only be set when visibility is selected",
      });
    } else problems.push(...unknownRepoProblems(hub, org, ids as number[], resource));
  }
  return problems;
}

export function unknownRepoProblems(hub: Hub, org: string, ids: number[], resource: string): FieldError[] {
  const known = new Set(hub.reposOf(org).map((r) => r.id));
  const unknown = ids.filter((id) => !known.has(id));
  return unknown.length === 0
    ? []
    : [
        {
          resource,
          field: "selected_repository_ids",
          code: "invalid",
          message: `Unknown repository ids: ${unknown.join(", ")}`,
        },
      ];
}

/** Whether an organisation-level item with this visibility reaches a repository. */
export function reaches(item: { visibility: Visibility; selected: number[] }, repo: Repo): boolean {
  if (item.visibility === "all") return true;
  if (item.visibility === "private") return repo.private;
  return item.selected.includes(repo.id);
}

export function assertNoProblems(problems: FieldError[]): void {
  if (problems.length > 0) throw new HubError(422, "Validation Failed", problems);
}

/** A change to an organisation-level item's selected repositories. */
export type SelectionChange = { set: number[] } | { add: number } | { remove: number };

export function applySelection(selected: number[], change: SelectionChange): number[] {
  if ("set" in change) return [...new Set(change.set)];
  if ("add" in change) return selected.includes(change.add) ? selected : [...selected, change.add];
  return selected.filter((id) => id !== change.remove);
}

export function selectionKind(change: SelectionChange): "set" | "added" | "removed" {
  return "set" in change ? "set" : "add" in change ? "added" : "removed";
}
