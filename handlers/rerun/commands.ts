// `steward flakes --repo OWNER/NAME [--since 30d] [--limit N]`: the repository's flakiest jobs, from
// the flakes the rerun handler recorded (rerun.flake_pattern), with counts. Reads STEWARD_DATA_DIR.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { parseDuration, type CommandContext, type HandlerCommand } from "../../src/index.js";
import type { FlakyJob } from "./flake.js";
import { flakyJobs } from "./flake-listing.js";

const usage = `usage: steward flakes --repo OWNER/NAME [--since 30d] [--limit N]
lists the jobs the flake pattern (rerun.flake_pattern) found failing between two passing commits,
flakiest first; reads STEWARD_DATA_DIR (default ./.steward)`;

const REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

interface FlakesArgs {
  repo: string;
  since: string;
  sinceMs: number;
  limit: number;
}

function formatFlakes(q: FlakesArgs, jobs: readonly FlakyJob[]): string {
  if (jobs.length === 0) return `no flaky jobs recorded for ${q.repo} in the last ${q.since}\n`;
  const rows = jobs.map((j) => [
    String(j.count),
    String(j.rerun),
    `${j.workflow} / ${j.job}`,
    j.lastSeen,
    j.lastSha.slice(0, 7),
  ]);
  const head = ["FLAKES", "RE-RUN", "WORKFLOW / JOB", "LAST SEEN", "COMMIT"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  return [`flakiest jobs of ${q.repo} in the last ${q.since}:`, line(head), ...rows.map(line)].join("\n") + "\n";
}

/** The parsed arguments, or a usage error. */
function parse(args: string[]): FlakesArgs | string {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: { repo: { type: "string" }, since: { type: "string" }, limit: { type: "string" } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    return (e as Error).message;
  }
  const repo = values.repo;
  if (!repo || !REPO.test(repo)) return "--repo OWNER/NAME is required";
  const since = values.since ?? "30d";
  const sinceMs = parseDuration(since);
  if (sinceMs === undefined || sinceMs <= 0) return `--since "${since}" is not a duration (use 7d, 30d, 12h)`;
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit <= 0) return "--limit must be a positive whole number";
  return { repo, since, sinceMs, limit };
}

async function run(args: string[], ctx: CommandContext): Promise<number> {
  const q = parse(args);
  if (typeof q === "string") {
    ctx.err(`steward flakes: ${q}\n\n${usage}\n`);
    return 2;
  }
  const store = await ctx.openStore({ dataDir: resolve(ctx.env.STEWARD_DATA_DIR || ".steward") }, { mustExist: true });
  if (!store) {
    ctx.out(formatFlakes(q, []));
    return 0;
  }
  try {
    const [found] = await flakyJobs(store.kv, { repos: [q.repo], sinceMs: q.sinceMs, limit: q.limit });
    ctx.out(formatFlakes(q, found?.jobs ?? []));
  } finally {
    await store.close();
  }
  return 0;
}

export const flakesCommand: HandlerCommand = {
  name: "flakes",
  summary: "flakiest jobs the rerun handler recorded: steward flakes --repo OWNER/NAME [--since 30d]",
  usage,
  run,
};
