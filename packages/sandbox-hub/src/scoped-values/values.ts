// What Actions secrets and variables have in common: named values per scope (organisation,
// repository, environment; names case-insensitive), organisation values reaching all, private or
// selected repositories, a write counter per scope, out-of-band edits, and their JSON. The two
// domains add only what differs: sealed values and keys (secrets), plain values and renames (variables).
import type { EffectsLog } from "../core/effects.js";
import type { Hub, Repo } from "../core/types.js";
import { HubError } from "../core/types.js";
import {
  applySelection,
  reaches,
  resolveScope,
  scopeKey,
  selectionKind,
  type Scope,
  type ScopeRef,
  type SelectionChange,
  type Visibility,
} from "./scopes.js";

export interface ScopedValue {
  name: string;
  /** The value (for a secret, the opened plaintext, kept for tests and never returned). */
  value: string;
  created_at: string;
  updated_at: string;
  visibility: Visibility | null;
  selected: number[];
}

/** How one kind of scoped value is named: in errors (`Secret`), effects (`secrets.secret.created`) and URLs. */
export interface ScopedKind {
  resource: "Secret" | "Variable";
  /** Effects area and the URL segment: `secrets`, `variables`. */
  area: "secrets" | "variables";
  /** Whether the API returns the value. */
  showsValue: boolean;
}

export class ScopedValues<T extends ScopedValue> {
  private readonly stores = new Map<string, Map<string, T>>();
  /** API writes (create, update, delete, selection) per scope key; out-of-band edits are not counted. */
  readonly writes = new Map<string, number>();

  constructor(
    protected readonly hub: Hub,
    protected readonly effects: EffectsLog,
    readonly kind: ScopedKind,
  ) {}

  list(scope: Scope): T[] {
    return [...(this.stores.get(scopeKey(scope))?.values() ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  }

  get(scope: Scope, name: string): T | undefined {
    return this.stores.get(scopeKey(scope))?.get(name.toUpperCase());
  }

  require(scope: Scope, name: string): T {
    const item = this.get(scope, name);
    if (!item) throw new HubError(404, "Not Found");
    return item;
  }

  delete(scope: Scope, name: string, by: string): void {
    const item = this.require(scope, name);
    this.storeOf(scope).delete(item.name);
    this.written(scope, "deleted", by, item.name);
  }

  /** Organisation values a repository can use. */
  reaching(repo: Repo): T[] {
    return this.list({ kind: "org", org: repo.owner }).filter((v) =>
      reaches({ visibility: v.visibility ?? "all", selected: v.selected }, repo),
    );
  }

  /** The selected-repository operations only apply to `selected` values (the API answers 409 otherwise). */
  requireSelectable(org: string, name: string): T {
    const item = this.require({ kind: "org", org }, name);
    if (item.visibility !== "selected")
      throw new HubError(409, `${this.kind.resource} ${item.name} does not have visibility selected`);
    return item;
  }

  /** The selected-repositories operations of an organisation value. */
  changeSelection(org: string, name: string, change: SelectionChange, by: string): void {
    const item = this.requireSelectable(org, name);
    item.selected = applySelection(item.selected, change);
    this.written({ kind: "org", org }, `repositories.${selectionKind(change)}`, by, item.name, { ids: item.selected });
  }

  /** A value by scope and name (for a secret, the plaintext the hub opened), undefined when there is none. */
  valueIn(ref: ScopeRef | Scope, name: string): string | undefined {
    return this.get(this.scope(ref), name)?.value;
  }

  /** API writes (create, update, delete, selection) in a scope. */
  writesTo(ref: ScopeRef | Scope): number {
    return this.writes.get(scopeKey(this.scope(ref))) ?? 0;
  }

  /** The value as the API renders it in a scope (organisation values also say whom they reach). */
  json(scope: Scope, item: T): Record<string, unknown> {
    const base = {
      name: item.name,
      ...(this.kind.showsValue ? { value: item.value } : {}),
      created_at: item.created_at,
      updated_at: item.updated_at,
    };
    if (scope.kind !== "org") return base;
    return {
      ...base,
      visibility: item.visibility,
      selected_repositories_url: `${this.hub.baseUrl}/orgs/${scope.org}/actions/${this.kind.area}/${item.name}/repositories`,
    };
  }

  /** Simulate a person editing a value in the UI: sets the value and bumps `updated_at` (no API write counted). */
  protected setOutOfBand(
    ref: ScopeRef | Scope,
    name: string,
    value: string,
    o: { visibility?: Visibility; selected?: number[] },
  ): T {
    const scope = this.scope(ref);
    const key = name.toUpperCase();
    const now = this.hub.timestamp();
    const store = this.storeOf(scope);
    const item =
      store.get(key) ??
      ({
        name: key,
        value,
        created_at: now,
        updated_at: now,
        visibility: scope.kind === "org" ? "all" : null,
        selected: [],
      } as ScopedValue as T);
    item.value = value;
    item.updated_at = now;
    if (o.visibility) item.visibility = o.visibility;
    if (o.selected) item.selected = [...o.selected];
    store.set(key, item);
    this.effects.record(`${this.kind.area}.${this.itemWord}.out_of_band`, "control", {
      scope: scopeKey(scope),
      name: key,
    });
    return item;
  }

  protected scope(ref: ScopeRef | Scope): Scope {
    return "kind" in ref ? ref : resolveScope(this.hub, ref);
  }

  protected storeOf(scope: Scope): Map<string, T> {
    const k = scopeKey(scope);
    let store = this.stores.get(k);
    if (!store) {
      store = new Map();
      this.stores.set(k, store);
    }
    return store;
  }

  /** Count an API write in a scope and record it (`secrets.secret.created`, `variables.variable.deleted`). */
  protected written(scope: Scope, what: string, by: string, name: string, detail: Record<string, unknown> = {}): void {
    const k = scopeKey(scope);
    this.writes.set(k, (this.writes.get(k) ?? 0) + 1);
    this.effects.record(`${this.kind.area}.${this.itemWord}.${what}`, by, { scope: k, name, ...detail });
  }

  private get itemWord(): string {
    return this.kind.resource.toLowerCase();
  }
}
