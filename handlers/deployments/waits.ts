// Durable state of the handler: which gates were answered (one answer per run, environment
// and path) and which wait, indexed by sha so a completed check finds the gates it may open.
import type { Store } from "../../src/index.js";
import { namesIt } from "./policy.js";

/**
 * One environment of one run waiting on Steward. `rule`: Steward is a custom protection rule and
 * answers with the installation token. `review`: Steward reviews as a required reviewer.
 */
export type Gate =
  | {
      path: "rule";
      owner: string;
      repo: string;
      runId: number;
      environment: string;
      installationId: number | undefined;
    }
  | {
      path: "review";
      owner: string;
      repo: string;
      runId: number;
      environment: string;
      environmentId: number;
      installationId: number | undefined;
    };

export interface WaitRecord {
  gate: Gate;
  sha: string;
  ref: string | undefined;
  /** ISO time the gate started waiting (GitHub's 30-day limit counts from here). */
  requestedAt: string;
  /** The last comment-only status sent, so an unchanged wait is not announced again. */
  lastComment?: string;
  /** When (decision clock, ISO) that status was sent: with `report_every`, the next is due that long after. */
  lastReportAt?: string;
  /**
   * The checks (names or globs) and environments the wait is on: only their events re-evaluate it.
   * `null` when it waits for time alone; records from before this field re-evaluate on every event.
   */
  recheckOn?: { checks: string[]; environments: string[] } | null;
}

const PREFIX = "deployments:";
const gateId = (g: Gate) => `${g.path}:${g.owner}/${g.repo}:${g.runId}:${g.environment.toLowerCase()}`.toLowerCase();

export const answeredKey = (g: Gate) => `${PREFIX}answered:${gateId(g)}`;
/** `ctx.once` key of a gate's final answer. */
export const answerOnceKey = (g: Gate) => `answer:${gateId(g)}`;
/** Key of the scheduled re-evaluation of a gate, within this handler's task namespace. */
export const taskKey = (g: Gate) => gateId(g);
const shaPrefix = (owner: string, repo: string, sha: string) => `${PREFIX}wait:${owner}/${repo}:${sha}:`.toLowerCase();
export const waitKey = (g: Gate, sha: string) => `${shaPrefix(g.owner, g.repo, sha)}${gateId(g)}`;

export async function allWaits(store: Pick<Store, "list">): Promise<{ key: string; record: WaitRecord }[]> {
  const entries = await store.list<WaitRecord>(`${PREFIX}wait:`);
  return entries.map((e) => ({ key: e.key, record: e.value }));
}

export async function waitsForSha(store: Store, owner: string, repo: string, sha: string): Promise<WaitRecord[]> {
  const entries = await store.list<WaitRecord>(shaPrefix(owner, repo, sha));
  return entries.map((e) => e.value);
}

/** Whether a finished check (`check`) or deployment (`environment`) is something `record` waits on. */
export function waitsOn(record: WaitRecord, what: { check?: string; environment?: string }): boolean {
  const on = record.recheckOn;
  if (on === undefined) return true;
  if (on === null) return false;
  if (what.check !== undefined) {
    const name = what.check;
    return on.checks.some((c) => namesIt(c, name));
  }
  if (what.environment !== undefined) {
    const env = what.environment.toLowerCase();
    return on.environments.some((e) => namesIt(e.toLowerCase(), env));
  }
  return on.checks.length > 0;
}
