// Organisation custom properties: a value per property per repository, as an organisation owner
// sets them. Only values are kept (the property schema is not needed by anything the hub serves).
import type { Hub, Repo } from "../core/types.js";
import { HubError } from "../core/types.js";
import type { EffectsLog } from "../core/effects.js";

type Value = string | string[] | null;

export class PropertiesDomain {
  /** repository id -> property name -> value. */
  private readonly values = new Map<number, Map<string, Value>>();

  constructor(
    private readonly hub: Hub,
    private readonly effects: EffectsLog,
  ) {}

  /**
   * Set custom property values of a repository (control surface). `null` removes a value, as
   * `PATCH /orgs/{org}/properties/values` does.
   */
  setValues(owner: string, repo: string, values: Record<string, Value>): void {
    const r = this.hub.reposOf(owner).find((x) => x.name.toLowerCase() === repo.toLowerCase());
    if (!r) throw new HubError(404, "Not Found");
    const map = this.values.get(r.id) ?? new Map<string, Value>();
    for (const [name, value] of Object.entries(values)) {
      if (value === null) map.delete(name);
      else map.set(name, value);
    }
    this.values.set(r.id, map);
    this.effects.record("properties.values.set", "control", { repository: `${r.owner}/${r.name}`, values });
  }

  /** Repositories of `org` that `repository_query` selects: `repo:OWNER/NAME` qualifiers and bare words (in the name). */
  select(org: string, query: string | null): Repo[] {
    const repos = this.hub.reposOf(org);
    const terms = (query ?? "").trim().split(/\s+/).filter(Boolean);
    if (terms.length === 0) return repos;
    const full = terms.filter((t) => t.startsWith("repo:")).map((t) => t.slice(5).toLowerCase());
    const words = terms.filter((t) => !t.includes(":")).map((t) => t.toLowerCase());
    return repos.filter(
      (r) =>
        (full.length === 0 || full.includes(`${r.owner}/${r.name}`.toLowerCase())) &&
        words.every((w) => r.name.toLowerCase().includes(w)),
    );
  }

  /** The `GET /orgs/{org}/properties/values` item of one repository. */
  json(repo: Repo) {
    const map = this.values.get(repo.id) ?? new Map<string, Value>();
    return {
      repository_id: repo.id,
      repository_name: repo.name,
      repository_full_name: `${repo.owner}/${repo.name}`,
      properties: [...map]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([property_name, value]) => ({ property_name, value })),
    };
  }
}
