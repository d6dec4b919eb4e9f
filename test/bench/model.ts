// The load model: the busiest day of an organisation with 10,000 repositories on one installation,
// generated deterministically from a seed for a sample of those repositories (the sample keeps the
// organisation's mix; its counts scale linearly to 10,000). docs/scale.md gives each rate's source
// or says it is an assumption. The model says what people and CI do (pushes, pull requests, merges,
// workflow runs and how they end, repository and installation changes, one admin-policy change);
// the replay (replay.ts) makes them happen on the sandbox hub, which sends the deliveries.

export const ORG_REPOS = 10_000;

/** The model's rates for the busiest day. Per 10,000 repositories unless said per repository. */
export const RATES = {
  /** Repositories with any activity that day. */
  activeShare: 0.25,
  /** Per active repository a day. */
  pullRequestsOpened: 1.5,
  /** Pushes to an open pull request's branch (`synchronize`), per opened pull request. */
  synchronizesPerPullRequest: 3,
  /** Merged pull requests (a push to the default branch), per active repository a day. */
  merges: 1.2,
  /** Pushes to branches without a pull request, per active repository a day. */
  branchPushes: 2,
  /** Jobs of the CI workflow (every commit); a lint workflow of one job runs beside it. */
  ciJobs: 3,
  /** A workflow run fails; of the failures, a share is transient (a re-run passes). */
  failureRate: 0.12,
  transientShare: 0.35,
  /**
   * Repository shares: a production environment gated by Steward (these have a policy file), a
   * policy file (of the others), merge queue, `tier: critical`.
   */
  policyShare: 0.3,
  mergeQueueShare: 0.1,
  deployShare: 0.2,
  criticalShare: 0.1,
  /** Of deployments, the share that starts before the commit's CI finished (the rule waits on checks). */
  deployBeforeChecks: 0.5,
  /** Per 10,000 repositories a day. */
  repositoriesCreated: 10,
  visibilityChanges: 4,
  renames: 3,
  installationRepositoriesChanges: 6,
  /** Minutes a CI run takes (uniform between). */
  runMinutes: [3, 12] as const,
};

/**
 * The share of the day's activity in each UTC hour: an organisation working across Europe and the
 * Americas, busiest where their working days overlap (assumption; see docs/scale.md).
 */
export const HOURLY = [1, 1, 1, 1.5, 2, 3, 5, 7, 8, 8.5, 8.5, 8, 8.5, 9.5, 10, 9.5, 8, 6.5, 5, 4, 3, 2.5, 2, 1.5].map(
  (w, _, all) => w / all.reduce((a, b) => a + b, 0),
);
export const BUSIEST_HOUR = HOURLY.indexOf(Math.max(...HOURLY));

export type Outcome = "success" | "transient" | "real";

export interface RunPlan {
  workflow: "CI" | "Lint" | "Deploy";
  /** Minutes after the commit that it starts. */
  startMin: number;
  /** Minutes it takes. */
  minutes: number;
  outcome: Outcome;
}

export interface ModelRepo {
  name: string;
  policy: boolean;
  mergeQueue: boolean;
  deploys: boolean;
  critical: boolean;
  private: boolean;
}

export type ModelEvent = { at: number; repo: number } & (
  | { kind: "pull_request.opened"; pr: number; runs: RunPlan[] }
  | { kind: "pull_request.synchronize"; pr: number; runs: RunPlan[] }
  | { kind: "merge"; pr: number; queue: boolean; runs: RunPlan[] }
  | { kind: "push"; branch: string; runs: RunPlan[] }
  | { kind: "repository.created" | "repository.visibility" | "repository.renamed" }
  | { kind: "installation_repositories" }
  | { kind: "admin-policy" }
);

export interface Model {
  seed: number;
  repos: ModelRepo[];
  /** The day's events, by time (ms since midnight UTC). */
  day: ModelEvent[];
  /** 10,000 / sample size: what a count of the sample is multiplied by for the organisation. */
  scale: number;
}

/** mulberry32: small, fast and the same everywhere for one seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function generateModel(o: { repos: number; seed: number }): Model {
  const rnd = random(o.seed);
  const chance = (p: number) => rnd() < p;
  const poisson = (mean: number) => {
    let k = 0;
    for (let p = rnd(), limit = Math.exp(-mean); p > limit; p *= rnd()) k++;
    return k;
  };
  const hourOfDay = () => {
    let x = rnd();
    for (let h = 0; h < 24; h++) if ((x -= HOURLY[h]!) < 0) return h;
    return 23;
  };
  const timeOfDay = () => (hourOfDay() * 60 + rnd() * 60) * 60_000;
  const r = RATES;
  const repos: ModelRepo[] = Array.from({ length: o.repos }, (_, i) => {
    const deploys = chance(r.deployShare);
    // A repository deploying through Steward's protection rule has a policy saying how.
    return {
      name: `${deploys ? "svc" : "repo"}-${String(i).padStart(5, "0")}`,
      policy: deploys || chance(r.policyShare),
      mergeQueue: chance(r.mergeQueueShare),
      deploys,
      critical: chance(r.criticalShare),
      private: chance(0.7),
    };
  });
  const outcome = (): Outcome =>
    chance(r.failureRate) ? (chance(r.transientShare) ? "transient" : "real") : "success";
  const run = (workflow: RunPlan["workflow"], startMin = 0): RunPlan => ({
    workflow,
    startMin,
    minutes: r.runMinutes[0] + rnd() * (r.runMinutes[1] - r.runMinutes[0]),
    outcome: workflow === "Deploy" ? "success" : outcome(),
  });
  const checks = () => [run("CI"), run("Lint")];
  const day: ModelEvent[] = [];
  repos.forEach((repo, i) => {
    if (!chance(r.activeShare)) return;
    for (let pr = 0, n = poisson(r.pullRequestsOpened); pr < n; pr++) {
      const opened = timeOfDay();
      day.push({ at: opened, repo: i, kind: "pull_request.opened", pr, runs: checks() });
      for (let s = poisson(r.synchronizesPerPullRequest); s > 0; s--)
        day.push({
          // Review rounds follow the opening by hours (exponential, mean 2 h), within the day.
          at: Math.min(opened - Math.log(1 - rnd()) * 7_200_000, 86_399_999),
          repo: i,
          kind: "pull_request.synchronize",
          pr,
          runs: checks(),
        });
    }
    // Merges are of pull requests opened before the day (their number is past the day's own).
    for (let m = 0, n = poisson(r.merges); m < n; m++)
      day.push({
        at: timeOfDay(),
        repo: i,
        kind: "merge",
        pr: 100 + m,
        queue: repo.mergeQueue,
        runs: [
          ...checks(),
          ...(repo.deploys ? [run("Deploy", chance(r.deployBeforeChecks) ? 1 : r.runMinutes[1] + 1)] : []),
        ],
      });
    for (let b = poisson(r.branchPushes); b > 0; b--)
      day.push({ at: timeOfDay(), repo: i, kind: "push", branch: `topic-${b}`, runs: checks() });
  });
  const perOrg = (count: number) => poisson((count * o.repos) / ORG_REPOS);
  const rare = [
    ["repository.created", r.repositoriesCreated],
    ["repository.visibility", r.visibilityChanges],
    ["repository.renamed", r.renames],
    ["installation_repositories", r.installationRepositoriesChanges],
  ] as const;
  for (const [kind, count] of rare)
    for (let n = perOrg(count); n > 0; n--) day.push({ at: timeOfDay(), repo: Math.floor(rnd() * o.repos), kind });
  // The one admin-policy change, in the busiest hour: the worst case for the budget.
  day.push({ at: (BUSIEST_HOUR * 60 + 30) * 60_000, repo: 0, kind: "admin-policy" });
  day.sort((a, b) => a.at - b.at);
  return { seed: o.seed, repos, day, scale: ORG_REPOS / o.repos };
}

/** The events of one hour of the day (0-23), their times made relative to the hour's start. */
export function hourOf(model: Model, hour: number): ModelEvent[] {
  return model.day
    .filter((e) => Math.floor(e.at / 3_600_000) === hour)
    .map((e) => ({ ...e, at: e.at - hour * 3_600_000 }));
}

/** Counts by kind, workflow runs, failed and transient runs: for the model's table in docs/scale.md. */
export function summarise(events: ModelEvent[]): Record<string, number> {
  const counts: Record<string, number> = {};
  const add = (k: string, n = 1) => (counts[k] = (counts[k] ?? 0) + n);
  for (const e of events) {
    add(e.kind);
    if ("runs" in e)
      for (const run of e.runs) {
        add("workflow runs");
        add("jobs", run.workflow === "CI" ? RATES.ciJobs : 1);
        if (run.outcome !== "success") add(`runs failed (${run.outcome})`);
        if (run.workflow === "Deploy") add("deployment protection rules");
      }
    if (e.kind === "merge" && e.queue) add("merge groups");
  }
  return counts;
}
