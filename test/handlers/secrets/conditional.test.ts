// Conditional reads of a sync against the sandbox hub: an unchanged list answers 304 (free of
// rate limit, as on GitHub) and its cached body is used; a changed one answers 200 and its new
// body is used, so drift and other people's changes are still seen. Counted from the hub's own
// request log and rate-limit bucket.
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createOctokitFactory } from "../../../src/api/client.js";
import { inProcessCoordination } from "../../../src/coordination/in-process.js";
import { ResponseCache } from "../../../src/api/conditional.js";
import { asRequester } from "../../../handlers/secrets/api.js";
import { testConfig } from "../../service/helpers.js";
import { createWorld, ORG, type World } from "./world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const SECRET_ENV = { STEWARD_SECRET_NPM_TOKEN: "npm-token-value-1", STEWARD_SECRET_SHARED: "shared-value" };
const N = 20;
const REPOS = Array.from({ length: N }, (_, i) => `svc-${String(i).padStart(2, "0")}`);

const POLICY = `
secrets:
  NPM_TOKEN: { from: env:STEWARD_SECRET_NPM_TOKEN, repositories: ['svc-*'] }
  ORG_TOKEN: { from: env:STEWARD_SECRET_SHARED, org: { visibility: selected, repositories: ['svc-0*'] } }
  DEPLOY_KEY: { from: env:STEWARD_SECRET_SHARED, environments: { production: [svc-01] } }
variables:
  REGION: { value: eu-west-1, repositories: ['svc-*'] }
  STAGE: { value: prod, environments: { production: [svc-01] } }
prune: true
`;

/** Every kind of list a sync reads, by path, for N repositories. */
function listPaths(): string[] {
  return [
    ...REPOS.flatMap((r) => [`/repos/${ORG}/${r}/actions/secrets`, `/repos/${ORG}/${r}/actions/variables`]),
    `/repos/${ORG}/svc-01/environments/production/secrets`,
    `/repos/${ORG}/svc-01/environments/production/variables`,
    `/orgs/${ORG}/actions/secrets`,
    `/orgs/${ORG}/actions/secrets/ORG_TOKEN/repositories`,
  ];
}

/** A world synced twice: the first sync writes, the second learns what its writes left behind. */
async function steadyWorld(): Promise<World> {
  const w = await createWorld({ repos: REPOS, environments: { "svc-01": ["production"] }, env: { ...SECRET_ENV } });
  // svc-00 has three pages of variables (30 a page), most of them people's.
  for (let i = 0; i < 64; i++)
    w.h.domains.variables.setVariableOutOfBand(
      { owner: ORG, repo: "svc-00" },
      `PEOPLE_${String(i).padStart(2, "0")}`,
      "x",
    );
  w.pushPolicy(POLICY);
  const first = await w.sync();
  expect(first.failures).toEqual([]);
  expect(first.applied.length).toBe(2 * N + 1 + 2);
  const second = await w.sync();
  expect(second.failures).toEqual([]);
  expect(second.applied).toEqual([]);
  return w;
}

/** Requests made and rate limit charged while `run` ran. */
async function measured<T>(w: World, run: () => Promise<T>) {
  const requests = w.mark();
  const before = w.charged();
  const result = await run();
  const made = requests();
  return {
    result,
    made,
    charged: w.charged() - before,
    gets: made.filter((r) => r.method === "GET"),
    writes: made.filter((r) => r.method !== "GET"),
  };
}

describe("conditional reads of a secrets sync", () => {
  it("a no-change sync sends every read with If-None-Match, gets 304s, and costs no rate limit and no writes", async () => {
    world = await steadyWorld();
    const w = world;
    const sent: { method: string; url: string; ifNoneMatch: unknown }[] = [];
    w.octokit.hook.before("request", (o) => {
      sent.push({ method: o.method, url: o.url, ifNoneMatch: (o.headers as Record<string, unknown>)["if-none-match"] });
    });
    const previous = await w.sync({ dryRun: true });
    sent.length = 0;

    const run = await measured(w, () => w.sync());
    expect(run.result.failures).toEqual([]);
    expect(run.result.applied).toEqual([]);
    expect(run.result.rows).toEqual(previous.rows);
    expect(run.result.rows.every((r) => r.action === "unchanged")).toBe(true);
    expect(run.writes).toEqual([]);
    // Every list was read, each conditionally, and each answered 304.
    const read = new Set(run.gets.map((r) => r.path));
    for (const p of listPaths()) expect(read, p).toContain(p);
    expect(run.gets.filter((r) => r.path === `/repos/${ORG}/svc-00/actions/variables`)).toHaveLength(3);
    expect(run.gets.filter((r) => r.status !== 304)).toEqual([]);
    expect(
      sent.filter((s) => s.method === "GET").every((s) => typeof s.ifNoneMatch === "string" && s.ifNoneMatch !== ""),
    ).toBe(true);
    expect(sent.filter((s) => s.method === "GET")).toHaveLength(run.gets.length);
    // The hub's rate limit charged nothing.
    expect(run.charged).toBe(0);
  });

  it("still sees drift: only the changed lists answer 200, and what drifted is repaired", async () => {
    world = await steadyWorld();
    const w = world;
    await w.sync();
    w.h.control.advanceClock(5_000);
    w.h.domains.secrets.setSecretOutOfBand({ owner: ORG, repo: "svc-03" }, "NPM_TOKEN", "tampered");
    w.h.domains.variables.setVariableOutOfBand({ owner: ORG, repo: "svc-04" }, "REGION", "us-east-1");
    w.h.domains.secrets.setSecretOutOfBand(
      { owner: ORG, repo: "svc-01", environment: "production" },
      "DEPLOY_KEY",
      "tampered",
    );

    const drift = await measured(w, () => w.sync());
    expect(drift.result.failures).toEqual([]);
    expect(drift.result.applied.map((r) => `${r.key} ${r.reason}`)).toEqual([
      expect.stringMatching(/^secret\/env\/svc-01\/production\/DEPLOY_KEY changed out of band \(updated_at /),
      expect.stringMatching(/^secret\/repo\/svc-03\/NPM_TOKEN changed out of band \(updated_at /),
      expect.stringMatching(/^variable\/repo\/svc-04\/REGION value changed out of band$/),
    ]);
    expect(w.h.domains.secrets.openedValue({ owner: ORG, repo: "svc-03" }, "NPM_TOKEN")).toBe(
      SECRET_ENV.STEWARD_SECRET_NPM_TOKEN,
    );
    expect(
      w.h.domains.secrets.openedValue({ owner: ORG, repo: "svc-01", environment: "production" }, "DEPLOY_KEY"),
    ).toBe(SECRET_ENV.STEWARD_SECRET_SHARED);
    expect(w.h.domains.variables.valueIn({ owner: ORG, repo: "svc-04" }, "REGION")).toBe("eu-west-1");
    const fresh = drift.gets
      .filter((r) => r.status === 200)
      .map((r) => r.path)
      .sort();
    expect(fresh).toEqual([
      `/repos/${ORG}/svc-01/environments/production/secrets`,
      `/repos/${ORG}/svc-03/actions/secrets`,
      `/repos/${ORG}/svc-04/actions/variables`,
    ]);
    expect(drift.gets.filter((r) => r.status !== 200 && r.status !== 304)).toEqual([]);
    expect(drift.charged).toBe(fresh.length + drift.writes.length);

    // The repair changed some of those lists again (a secret rewritten within the second of the
    // edit keeps its updated_at): the next sync reads only those, then all is quiet.
    const after = await measured(w, () => w.sync());
    expect(after.result.applied).toEqual([]);
    expect(after.writes).toEqual([]);
    for (const r of after.gets.filter((g) => g.status === 200)) expect(fresh).toContain(r.path);
    const quiet = await measured(w, () => w.sync());
    expect(quiet.result.applied).toEqual([]);
    expect(quiet.charged).toBe(0);
  });

  it("a list someone changed answers 200 and its new body is what the plan sees", async () => {
    world = await steadyWorld();
    const w = world;
    await w.sync();
    // A person adds SENTRY_DSN by hand in svc-05; then the policy asks for it everywhere.
    w.h.control.advanceClock(2_000);
    w.h.domains.secrets.setSecretOutOfBand({ owner: ORG, repo: "svc-05" }, "SENTRY_DSN", "person's");
    w.pushPolicy(
      `${POLICY}\n`.replace(
        "secrets:\n",
        "secrets:\n  SENTRY_DSN: { from: env:STEWARD_SECRET_SHARED, repositories: ['svc-*'] }\n",
      ),
    );

    const plan = await measured(w, () => w.sync({ dryRun: true }));
    const sentry = plan.result.rows.filter((r) => r.name === "SENTRY_DSN");
    expect(sentry).toHaveLength(N);
    // The person's secret is a conflict (no adopt): seen through the fresh list, never overwritten.
    expect(sentry.filter((r) => r.conflict).map((r) => [r.scope, r.action])).toEqual([
      [{ level: "repo", repo: "svc-05" }, "unchanged"],
    ]);
    expect(sentry.find((r) => r.conflict)?.reason).toMatch(
      /^exists and Steward did not create it, so it is left as it is \(exists but Steward never wrote it/,
    );
    expect(sentry.filter((r) => r.action === "create")).toHaveLength(N - 1);
    const fresh = plan.gets
      .filter((r) => r.status === 200)
      .map((r) => r.path)
      .sort();
    // The push also changed the admin repository's entry in the installation's repository list.
    expect(fresh).toEqual([
      "/installation/repositories",
      `/repos/${ORG}/admin/contents/.github%2Fsteward%2Fsecrets.yml`,
      `/repos/${ORG}/svc-05/actions/secrets`,
    ]);
    expect(plan.writes).toEqual([]);
  });

  it("a renewed installation token (GitHub's ETags are per token) pays for one round of reads, with the same answers", async () => {
    world = await steadyWorld();
    const w = world;
    const before = await w.sync();
    const renewed = asRequester(await w.newClient());
    const first = await measured(w, () => w.sync({ api: renewed }));
    expect(first.result.rows).toEqual(before.rows);
    expect(first.writes).toEqual([]);
    expect(first.gets.filter((r) => r.status !== 200)).toEqual([]);
    expect(first.charged).toBe(first.gets.length);
    const again = await measured(w, () => w.sync({ api: renewed }));
    expect(again.result.rows).toEqual(before.rows);
    expect(again.gets.filter((r) => r.status !== 304)).toEqual([]);
    expect(again.charged).toBe(0);
  });

  it("through the service's own client (throttling, retries) a 304 is an answer, not an error to retry", async () => {
    world = await steadyWorld();
    const w = world;
    const statuses: number[] = [];
    const factory = createOctokitFactory({
      config: testConfig({ appId: Number(w.h.env.APP_ID), privateKey: w.h.env.PRIVATE_KEY, apiUrl: w.h.url }),
      logger: pino({ level: "silent" }),
      coordination: inProcessCoordination(),
      writeIntervalMs: 0,
      observe: { request: (who, status) => who !== "app" && statuses.push(status) },
    });
    const api = asRequester(await factory.octokitFor(w.installationId));
    await w.sync({ api });
    statuses.length = 0;
    const run = await measured(w, () => w.sync({ api }));
    expect(run.result.failures).toEqual([]);
    expect(run.result.applied).toEqual([]);
    expect(run.gets.length).toBeGreaterThan(2 * N);
    expect(run.gets.filter((r) => r.status !== 304)).toEqual([]);
    // One exchange per request: nothing retried.
    expect(statuses).toHaveLength(run.made.length);
    expect(run.charged).toBe(0);
  });
});

describe("the cache of answers", () => {
  it("is bounded in entries and bytes, least recently used out first", () => {
    const cache = new ResponseCache({ maxEntries: 3, maxBytes: 1_000 });
    for (const k of ["a", "b", "c"]) cache.set(k, { etag: `"${k}"`, body: "x".repeat(100) });
    cache.get("a");
    cache.set("d", { etag: '"d"', body: "x".repeat(100) });
    expect(["a", "b", "c", "d"].filter((k) => cache.get(k))).toEqual(["a", "c", "d"]);
    cache.set("e", { etag: '"e"', body: "x".repeat(800) });
    expect(cache.bytes).toBeLessThanOrEqual(1_000);
    expect(cache.get("e")).toBeDefined();
    // An answer larger than the whole budget is not kept at all.
    cache.set("huge", { etag: '"h"', body: "x".repeat(2_000) });
    expect(cache.get("huge")).toBeUndefined();
    cache.clear();
    expect([cache.size, cache.bytes]).toEqual([0, 0]);
  });
});
