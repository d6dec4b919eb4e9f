// Actions variables at repository, organisation and environment level. Unlike secrets,
// values are plain and returned by the API.
import type { Hub, Repo } from "../core/types.js";
import { HubError } from "../core/types.js";
import { assertWithinLimits } from "./quotas.js";
import type { EffectsLog } from "./effects.js";
import { applySelection, assertNoProblems, nameProblems, selectionKind, type SelectionChange, reaches, resolveScope, ScopedItems, scopeKey, visibilityProblems, type Scope, type ScopeRef, type Visibility } from "./scopes.js";

export interface Variable {
  name: string;
  value: string;
  created_at: string;
  updated_at: string;
  visibility: Visibility | null;
  selected: number[];
}

export interface VariableBody {
  name?: unknown;
  value?: unknown;
  visibility?: unknown;
  selected_repository_ids?: unknown;
}

export class VariablesDomain extends ScopedItems<Variable> {
  constructor(
    private readonly hub: Hub,
    private readonly effects: EffectsLog,
  ) {
    super();
  }

  /** `POST .../variables`: 409 when the name is taken. */
  create(scope: Scope, body: VariableBody, by: string): Variable {
    const problems = [];
    if (typeof body.name !== "string") problems.push({ resource: "Variable", field: "name", code: "missing_field" });
    else problems.push(...nameProblems(body.name, "Variable"));
    if (typeof body.value !== "string") problems.push({ resource: "Variable", field: "value", code: "missing_field" });
    if (scope.kind === "org") problems.push(...visibilityProblems(this.hub, scope.org, body.visibility, body.selected_repository_ids, "Variable", true));
    assertNoProblems(problems);
    const name = (body.name as string).toUpperCase();
    if (this.get(scope, name)) throw new HubError(409, "Already exists - Variable already exists");
    assertWithinLimits("Variable", scope, { creating: true, count: this.storeOf(scope).size, value: body.value as string });
    const now = this.hub.timestamp();
    const variable: Variable = {
      name,
      value: body.value as string,
      created_at: now,
      updated_at: now,
      visibility: scope.kind === "org" ? (body.visibility as Visibility) : null,
      selected: scope.kind === "org" && body.visibility === "selected" ? [...((body.selected_repository_ids as number[] | undefined) ?? [])] : [],
    };
    this.storeOf(scope).set(name, variable);
    this.written(scope, "variable.created", by, name);
    return variable;
  }

  /** `PATCH .../variables/{name}`: change value, visibility, selection, or rename. */
  update(scope: Scope, name: string, body: VariableBody, by: string): Variable {
    const variable = this.require(scope, name);
    const problems = [];
    if (body.name !== undefined) {
      if (typeof body.name !== "string") problems.push({ resource: "Variable", field: "name", code: "invalid" });
      else problems.push(...nameProblems(body.name, "Variable"));
    }
    if (body.value !== undefined && typeof body.value !== "string") problems.push({ resource: "Variable", field: "value", code: "invalid" });
    else if (typeof body.value === "string") assertWithinLimits("Variable", scope, { creating: false, count: 0, value: body.value });
    if (scope.kind === "org") {
      problems.push(...visibilityProblems(this.hub, scope.org, body.visibility ?? (body.selected_repository_ids !== undefined ? variable.visibility : undefined), body.selected_repository_ids, "Variable", false));
    } else if (body.visibility !== undefined || body.selected_repository_ids !== undefined) {
      problems.push({ resource: "Variable", field: "visibility", code: "invalid", message: "only organization variables have a visibility" });
    }
    assertNoProblems(problems);
    const store = this.storeOf(scope);
    if (typeof body.name === "string" && body.name.toUpperCase() !== variable.name) {
      const renamed = body.name.toUpperCase();
      if (store.has(renamed)) throw new HubError(409, "Already exists - Variable already exists");
      store.delete(variable.name);
      variable.name = renamed;
      store.set(renamed, variable);
    }
    if (typeof body.value === "string") variable.value = body.value;
    if (body.visibility !== undefined) variable.visibility = body.visibility as Visibility;
    if (body.selected_repository_ids !== undefined) variable.selected = [...(body.selected_repository_ids as number[])];
    if (variable.visibility !== "selected") variable.selected = [];
    variable.updated_at = this.hub.timestamp();
    this.written(scope, "variable.updated", by, variable.name);
    return variable;
  }

  delete(scope: Scope, name: string, by: string): void {
    const variable = this.require(scope, name);
    this.storeOf(scope).delete(variable.name);
    this.written(scope, "variable.deleted", by, variable.name);
  }

  orgVariablesFor(repo: Repo): Variable[] {
    return this.list({ kind: "org", org: repo.owner }).filter((v) => reaches({ visibility: v.visibility ?? "all", selected: v.selected }, repo));
  }

  requireSelectable(org: string, name: string): Variable {
    const v = this.require({ kind: "org", org }, name);
    if (v.visibility !== "selected") throw new HubError(409, `Variable ${v.name} does not have visibility selected`);
    return v;
  }

  /** The selected-repositories operations of an organisation variable. */
  changeSelection(org: string, name: string, change: SelectionChange, by: string): void {
    const v = this.requireSelectable(org, name);
    v.selected = applySelection(v.selected, change);
    this.written({ kind: "org", org }, `variable.repositories.${selectionKind(change)}`, by, v.name);
  }

  // ---- control ----------------------------------------------------------------------------

  /** Simulate a person editing a variable in the UI. */
  setVariableOutOfBand(ref: ScopeRef | Scope, name: string, value: string, o: { visibility?: Visibility; selected?: number[] } = {}): Variable {
    const scope = "kind" in ref ? ref : resolveScope(this.hub, ref);
    const key = name.toUpperCase();
    const now = this.hub.timestamp();
    const store = this.storeOf(scope);
    const v = store.get(key) ?? { name: key, value, created_at: now, updated_at: now, visibility: scope.kind === "org" ? "all" : null, selected: [] };
    v.value = value;
    v.updated_at = now;
    if (o.visibility) v.visibility = o.visibility;
    if (o.selected) v.selected = [...o.selected];
    store.set(key, v);
    this.effects.record({ domain: "variables", kind: "variable.out_of_band", by: "control", detail: { scope: scopeKey(scope), name: key } });
    return v;
  }

  valueIn(ref: ScopeRef | Scope, name: string): string | undefined {
    return this.get("kind" in ref ? ref : resolveScope(this.hub, ref), name)?.value;
  }

  writesTo(ref: ScopeRef | Scope): number {
    return this.writes.get(scopeKey("kind" in ref ? ref : resolveScope(this.hub, ref))) ?? 0;
  }

  private written(scope: Scope, kind: string, by: string, name: string): void {
    const k = this.countWrite(scope);
    this.effects.record({ domain: "variables", kind, by, detail: { scope: k, name } });
  }
}
