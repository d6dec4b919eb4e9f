// The flakiest jobs, read from the flake records the rerun handler keeps (rerun.flake_pattern):
// the one reading `steward flakes` and the console's /console/flakes page share.
import type { Store } from "../../src/index.js";
import { rankFlakes, type FlakeRecord, type FlakyJob } from "./flake.js";
import { flakePrefix } from "./keys.js";

export interface FlakesQuery {
  /** `owner/name` of each repository to list; one reads only that repository's records. */
  repos: readonly string[];
  sinceMs: number;
  /** Jobs listed per repository. */
  limit: number;
}

export interface RepositoryFlakes {
  repository: string;
  jobs: FlakyJob[];
}

/** Per repository asked for that has flakes since `sinceMs` ago, its flakiest jobs first. */
export async function flakyJobs(
  store: Pick<Store, "list">,
  q: FlakesQuery,
  now = new Date(),
): Promise<RepositoryFlakes[]> {
  if (q.repos.length === 0) return [];
  const wanted = new Map(q.repos.map((r) => [r.toLowerCase(), r]));
  // One repository: its own key range. Several: one pass over every record, kept when asked for.
  const prefix = q.repos.length === 1 ? flakePrefix(q.repos[0]!) : flakePrefix();
  const byRepo = new Map<string, FlakeRecord[]>();
  for (const { value } of await store.list<FlakeRecord>(prefix)) {
    const name = value?.repository?.toLowerCase();
    if (name === undefined || !wanted.has(name)) continue;
    byRepo.set(name, [...(byRepo.get(name) ?? []), value]);
  }
  const since = new Date(now.getTime() - q.sinceMs);
  return [...byRepo]
    .map(([name, records]) => ({ repository: wanted.get(name)!, jobs: rankFlakes(records, since).slice(0, q.limit) }))
    .filter((r) => r.jobs.length > 0)
    .sort((a, b) => b.jobs[0]!.count - a.jobs[0]!.count || a.repository.localeCompare(b.repository));
}
