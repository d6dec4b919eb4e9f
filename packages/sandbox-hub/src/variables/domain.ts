// Actions variables at repository, organisation and environment level. Unlike secrets,
// values are plain and returned by the API.
import type { EffectsLog } from "../core/effects.js";
import type { Hub } from "../core/types.js";
import { HubError } from "../core/types.js";
import { assertWithinLimits } from "../scoped-values/quotas.js";
import { ScopedValues, type ScopedValue } from "../scoped-values/values.js";
import {
  assertNoProblems,
  nameProblems,
  visibilityProblems,
  type Scope,
  type ScopeRef,
  type Visibility,
} from "../scoped-values/scopes.js";

export type Variable = ScopedValue;

export interface VariableBody {
  name?: unknown;
  value?: unknown;
  visibility?: unknown;
  selected_repository_ids?: unknown;
}

export class VariablesDomain extends ScopedValues<Variable> {
  constructor(hub: Hub, effects: EffectsLog) {
    super(hub, effects, { resource: "Variable", area: "variables", showsValue: true });
  }

  /** `POST .../variables`: 409 when the name is taken. */
  create(scope: Scope, body: VariableBody, by: string): Variable {
    const problems = [];
    if (typeof body.name !== "string") problems.push({ resource: "Variable", field: "name", code: "missing_field" });
    else problems.push(...nameProblems(body.name, "Variable"));
    if (typeof body.value !== "string") problems.push({ resource: "Variable", field: "value", code: "missing_field" });
    if (scope.kind === "org")
      problems.push(
        ...visibilityProblems(this.hub, scope.org, body.visibility, body.selected_repository_ids, "Variable", true),
      );
    assertNoProblems(problems);
    const name = (body.name as string).toUpperCase();
    if (this.get(scope, name)) throw new HubError(409, "Already exists - Variable already exists");
    assertWithinLimits("Variable", scope, {
      creating: true,
      count: this.storeOf(scope).size,
      value: body.value as string,
    });
    const now = this.hub.timestamp();
    const variable: Variable = {
      name,
      value: body.value as string,
      created_at: now,
      updated_at: now,
      visibility: scope.kind === "org" ? (body.visibility as Visibility) : null,
      selected:
        scope.kind === "org" && body.visibility === "selected"
          ? [...((body.selected_repository_ids as number[] | undefined) ?? [])]
          : [],
    };
    this.storeOf(scope).set(name, variable);
    this.written(scope, "created", by, name);
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
    if (body.value !== undefined && typeof body.value !== "string")
      problems.push({ resource: "Variable", field: "value", code: "invalid" });
    else if (typeof body.value === "string")
      assertWithinLimits("Variable", scope, { creating: false, count: 0, value: body.value });
    if (scope.kind === "org") {
      problems.push(
        ...visibilityProblems(
          this.hub,
          scope.org,
          body.visibility ?? (body.selected_repository_ids !== undefined ? variable.visibility : undefined),
          body.selected_repository_ids,
          "Variable",
          false,
        ),
      );
    } else if (body.visibility !== undefined || body.selected_repository_ids !== undefined) {
      problems.push({
        resource: "Variable",
        field: "visibility",
        code: "invalid",
        message: "only organization variables have a visibility",
      });
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
    this.written(scope, "updated", by, variable.name);
    return variable;
  }

  // ---- control ----------------------------------------------------------------------------

  /** Simulate a person editing a variable in the UI. */
  setVariableOutOfBand(
    ref: ScopeRef | Scope,
    name: string,
    value: string,
    o: { visibility?: Visibility; selected?: number[] } = {},
  ): Variable {
    return this.setOutOfBand(ref, name, value, o);
  }
}
