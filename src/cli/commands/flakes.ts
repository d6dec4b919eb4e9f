// `steward flakes --repo OWNER/NAME [--since 30d] [--limit N]`: the repository's flakiest jobs, from
// the flakes the rerun handler recorded (rerun.flake_pattern), with counts. Reads STEWARD_DATA_DIR.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { FlakyJob } from "../../../handlers/rerun/flake.js";
import { flakyJobs } from "../../../handlers/rerun/flake-listing.js";
import { parseDuration } from "../../policy/patterns.js";
import { openSqliteStore, storeFileName } from "../../store/sqlite/store.js";

export const usage = `usage: steward flakes --repo OWNER/NAME [--since 30d] [--limit N]
lists the jobs the flake pattern (rerun.flake_pattern) found failing between two passing commits,
flakiest first; reads STEWARD_DATA_DIR (default ./.steward)`;

const REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

export interface FlakesQuery {
  repo: string;
  sinceMs: number;
  limit: number;
}

export function formatFlakes(q: FlakesQuery, since: string, jobs: readonly FlakyJob[]): string {
  if (jobs.length === 0) return `no flaky jobs recorded for ${q.repo} in the last ${since}\n`;
  const rows = jobs.map((j) => [String(j.count), String(j.rerun), `${j.workflow} / ${j.job}`, j.lastSeen, j.lastSha.slice(0, 7)]);
  const head = ["FLAKES", "RE-RUN", "WORKFLOW / JOB", "LAST SEEN", "COMMIT"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  return [`flakiest jobs of ${q.repo} in the last ${since}:`, line(head), ...rows.map(line)].join("\n") + "\n";
}

class UsageError extends Error {}

function parse(args: string[]): { q: FlakesQuery; since: string } {
  let values;
  try {
    ({ values } = parseArgs({ args, options: { repo: { type: "string" }, since: { type: "string" }, limit: { type: "string" } }, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const repo = values.repo;
  if (!repo || !REPO.test(repo)) throw new UsageError("--repo OWNER/NAME is required");
  const since = values.since ?? "30d";
  const sinceMs = parseDuration(since);
  if (sinceMs === undefined || sinceMs <= 0) throw new UsageError(`--since "${since}" is not a duration (use 7d, 30d, 12h)`);
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit <= 0) throw new UsageError("--limit must be a positive whole number");
  return { q: { repo, sinceMs, limit }, since };
}

export async function run(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parse(args);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`steward flakes: ${e.message}\n\n${usage}\n`);
    return 2;
  }
  const dir = resolve(process.env.STEWARD_DATA_DIR || ".steward");
  if (!existsSync(join(dir, storeFileName))) {
    process.stdout.write(formatFlakes(parsed.q, parsed.since, []));
    return 0;
  }
  const store = openSqliteStore(dir);
  try {
    const [found] = await flakyJobs(store.kv, { repos: [parsed.q.repo], sinceMs: parsed.q.sinceMs, limit: parsed.q.limit });
    process.stdout.write(formatFlakes(parsed.q, parsed.since, found?.jobs ?? []));
  } finally {
    store.close();
  }
  return 0;
}
