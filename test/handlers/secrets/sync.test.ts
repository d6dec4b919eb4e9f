import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FINGERPRINT_KEY_FILE } from "../../../handlers/secrets/fingerprint.js";
import { recordPrefix } from "../../../handlers/secrets/records.js";
import { syncSummary, textReport } from "../../../handlers/secrets/report.js";
import { createWorld, ORG, type World } from "./world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const SECRET_ENV = { STEWARD_SECRET_NPM_TOKEN: "npm-token-value-1", STEWARD_SECRET_SHARED: "shared-value" };

async function fullWorld(): Promise<World> {
  const w = await createWorld({
    repos: ["web-app", "web-site", "api", "service-a", "service-b", "private-tools"],
    environments: { "service-a": ["production"], "service-b": ["production", "staging"] },
    env: { ...SECRET_ENV },
  });
  // Beside, not inside, Steward's data directory: that one is never readable as a source.
  const keyFile = join(await mkdtemp(join(tmpdir(), "steward-keys-")), "deploy_key");
  await writeFile(keyFile, "-----BEGIN KEY-----\nabc\n-----END KEY-----\n");
  w.env.DEPLOY_KEY_FILE = keyFile;
  w.pushPolicy(`
secrets:
  NPM_TOKEN:
    from: env:STEWARD_SECRET_NPM_TOKEN
    org:
      visibility: selected
      repositories: ["web-*", api]
  SHARED_ALL:
    from: env:STEWARD_SECRET_SHARED
    org: { visibility: all }
  SHARED_PRIVATE:
    from: env:STEWARD_SECRET_SHARED
    org: { visibility: private }
  DEPLOY_KEY:
    from: file:${keyFile}
    repositories: ["service-*"]
    environments:
      production: ["service-*"]
variables:
  REGION:
    value: eu-west-1
    org: { visibility: all }
  TIER:
    value: gold
    repositories: [api]
  STAGE:
    value: prod
    environments:
      production: [service-a]
prune: true
`);
  return w;
}

describe("secrets sync against the sandbox hub", () => {
  it("puts every scope and visibility in place, sealed so the hub opens the policy's values; a second sync writes nothing", async () => {
    world = await fullWorld();
    const { h } = world;
    const s = h.domains.secrets;
    const v = h.domains.variables;
    const first = await world.sync();
    expect(first.failures).toEqual([]);
    expect(first.applied.filter((r) => r.action === "create")).toHaveLength(first.applied.length);

    expect(s.openedValue({ org: ORG }, "NPM_TOKEN")).toBe("npm-token-value-1");
    const npm = s.get({ kind: "org", org: ORG }, "NPM_TOKEN")!;
    expect(npm.visibility).toBe("selected");
    const ids = ["web-app", "web-site", "api"].map((n) => h.control.repo(ORG, n)!.id).sort((a, b) => a - b);
    expect([...npm.selected].sort((a, b) => a - b)).toEqual(ids);
    expect(s.get({ kind: "org", org: ORG }, "SHARED_ALL")!.visibility).toBe("all");
    expect(s.get({ kind: "org", org: ORG }, "SHARED_PRIVATE")!.visibility).toBe("private");
    // The file's one trailing newline is dropped, the inner ones kept.
    const key = "-----BEGIN KEY-----\nabc\n-----END KEY-----";
    expect(s.openedValue({ owner: ORG, repo: "service-a" }, "DEPLOY_KEY")).toBe(key);
    expect(s.openedValue({ owner: ORG, repo: "service-b" }, "DEPLOY_KEY")).toBe(key);
    expect(s.openedValue({ owner: ORG, repo: "service-a", environment: "production" }, "DEPLOY_KEY")).toBe(key);
    expect(s.openedValue({ owner: ORG, repo: "service-b", environment: "production" }, "DEPLOY_KEY")).toBe(key);
    expect(s.openedValue({ owner: ORG, repo: "service-b", environment: "staging" }, "DEPLOY_KEY")).toBeUndefined();
    expect(s.openedValue({ owner: ORG, repo: "web-app" }, "DEPLOY_KEY")).toBeUndefined();
    expect(v.valueIn({ org: ORG }, "REGION")).toBe("eu-west-1");
    expect(v.valueIn({ owner: ORG, repo: "api" }, "TIER")).toBe("gold");
    expect(v.valueIn({ owner: ORG, repo: "service-a", environment: "production" }, "STAGE")).toBe("prod");

    const requests = world.mark();
    const second = await world.sync();
    expect(second.applied).toEqual([]);
    expect(second.failures).toEqual([]);
    expect(second.rows.every((r) => r.action === "unchanged")).toBe(true);
    expect(requests().filter((r) => r.method !== "GET")).toEqual([]);

    // Neither the store nor the audit trail holds a value.
    const records = await world.store.kv.list(recordPrefix(ORG));
    const audit = await world.store.kv.auditLog();
    const stored = JSON.stringify([records, audit]);
    for (const value of [...Object.values(SECRET_ENV), "BEGIN KEY"]) expect(stored).not.toContain(value);
    expect(audit.length).toBeGreaterThan(0);
  });

  it("creates the fingerprint key once, readable only by the service", async () => {
    world = await fullWorld();
    await world.sync();
    const { stat, readFile } = await import("node:fs/promises");
    const file = join(world.dataDir, FINGERPRINT_KEY_FILE);
    const before = await readFile(file);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    await world.sync();
    expect(await readFile(file)).toEqual(before);
  });

  it("repairs drift, follows key rotation, reconciles repositories separately from values, and prunes only its own", async () => {
    world = await fullWorld();
    const { h } = world;
    const s = h.domains.secrets;
    await world.sync();

    // Someone edits a secret in the UI: updated_at moves, the next sync rewrites it.
    h.control.advanceClock(5_000);
    s.setSecretOutOfBand({ owner: ORG, repo: "service-a" }, "DEPLOY_KEY", "tampered");
    h.domains.variables.setVariableOutOfBand({ owner: ORG, repo: "api" }, "TIER", "bronze");
    // A person's own secret next to Steward's.
    s.setSecretOutOfBand({ owner: ORG, repo: "service-a" }, "HUMAN_SECRET", "mine");
    const drift = await world.sync();
    expect(drift.applied.map((r) => `${r.key} ${r.reason}`)).toEqual([
      expect.stringMatching(/^secret\/repo\/service-a\/DEPLOY_KEY changed out of band/),
      expect.stringMatching(/^variable\/repo\/api\/TIER value changed out of band/),
    ]);
    expect(s.openedValue({ owner: ORG, repo: "service-a" }, "DEPLOY_KEY")).toContain("BEGIN KEY");
    expect(h.domains.variables.valueIn({ owner: ORG, repo: "api" }, "TIER")).toBe("gold");

    // Key rotation: the cached key is refused once, then the new key is fetched and used.
    s.rotateKey({ org: ORG });
    world.env.STEWARD_SECRET_NPM_TOKEN = "npm-token-value-2";
    const requests = world.mark();
    const rotated = await world.sync();
    expect(rotated.failures).toEqual([]);
    expect(rotated.applied.map((r) => [r.name, r.reason])).toEqual([["NPM_TOKEN", "value changed in policy"]]);
    expect(s.openedValue({ org: ORG }, "NPM_TOKEN")).toBe("npm-token-value-2");
    const puts = requests().filter((r) => r.path === `/orgs/${ORG}/actions/secrets/NPM_TOKEN` && r.method === "PUT");
    expect(puts.map((r) => r.status)).toEqual([422, 204]);
    expect(requests().filter((r) => r.path.endsWith("/public-key"))).toHaveLength(1);

    // Someone adds a repository to the selection by hand: only that repository's access is taken
    // back, one repository at a time (replacing the list would race with other people's changes).
    const tools = h.control.repo(ORG, "private-tools")!.id;
    await world.api.request("PUT /orgs/{org}/actions/secrets/{name}/repositories/{repository_id}", {
      org: ORG,
      name: "NPM_TOKEN",
      repository_id: tools,
    });
    const requests2 = world.mark();
    const reconcile = await world.sync();
    expect(reconcile.applied.map((r) => [r.name, r.changes, r.reason])).toEqual([
      ["NPM_TOKEN", ["repositories"], "selected repositories +0 -1"],
    ]);
    expect(
      requests2()
        .filter((r) => r.method !== "GET")
        .map((r) => `${r.method} ${r.path}`),
    ).toEqual([`DELETE /orgs/${ORG}/actions/secrets/NPM_TOKEN/repositories/${tools}`]);
    expect(s.get({ kind: "org", org: ORG }, "NPM_TOKEN")!.selected).not.toContain(tools);

    // Entries removed from the policy: Steward's targets go, the person's secret stays.
    world.pushPolicy(`
secrets:
  NPM_TOKEN:
    from: env:STEWARD_SECRET_NPM_TOKEN
    org: { visibility: selected, repositories: ["web-*", api] }
variables:
  REGION: { value: eu-west-1, org: { visibility: all } }
prune: true
`);
    const pruned = await world.sync();
    expect(pruned.failures).toEqual([]);
    expect(new Set(pruned.applied.map((r) => r.action))).toEqual(new Set(["delete"]));
    expect(pruned.applied.map((r) => r.key).sort()).toEqual([
      "secret/env/service-a/production/DEPLOY_KEY",
      "secret/env/service-b/production/DEPLOY_KEY",
      "secret/org/SHARED_ALL",
      "secret/org/SHARED_PRIVATE",
      "secret/repo/service-a/DEPLOY_KEY",
      "secret/repo/service-b/DEPLOY_KEY",
      "variable/env/service-a/production/STAGE",
      "variable/repo/api/TIER",
    ]);
    expect(s.openedValue({ owner: ORG, repo: "service-a" }, "HUMAN_SECRET")).toBe("mine");
    expect(s.openedValue({ owner: ORG, repo: "service-a" }, "DEPLOY_KEY")).toBeUndefined();
    expect((await world.sync()).applied).toEqual([]);
  });

  it("does not prune without prune: true, and never overwrites or deletes a secret a person created without adopt", async () => {
    world = await createWorld({ repos: ["web"], env: { ...SECRET_ENV } });
    const s = world.h.domains.secrets;
    s.setSecretOutOfBand({ owner: ORG, repo: "web" }, "NPM_TOKEN", "person's");
    world.pushPolicy(
      `secrets:\n  NPM_TOKEN: { from: env:STEWARD_SECRET_NPM_TOKEN, repositories: [web] }\n  MINE: { from: env:STEWARD_SECRET_SHARED, repositories: [web] }\n`,
    );
    const first = await world.sync();
    expect(first.applied.map((r) => [r.name, r.action])).toEqual([["MINE", "create"]]);
    expect(first.failures).toEqual([]);
    expect(first.leftAlone.map((f) => f.name)).toEqual(["NPM_TOKEN"]);
    expect(s.openedValue({ owner: ORG, repo: "web" }, "NPM_TOKEN")).toBe("person's");
    world.pushPolicy("secrets: {}\n");
    const kept = await world.sync();
    expect(kept.applied).toEqual([]);
    expect(kept.rows.map((r) => [r.name, r.reason])).toEqual([["MINE", "no longer in policy; prune is off"]]);
    world.pushPolicy("secrets: {}\nprune: true\n");
    const pruned = await world.sync();
    expect(pruned.applied.map((r) => r.name)).toEqual(["MINE"]);
    expect(s.openedValue({ owner: ORG, repo: "web" }, "NPM_TOKEN")).toBe("person's");
  });

  it("reads variables 30 a page", async () => {
    world = await createWorld({ repos: ["api"] });
    const v = world.h.domains.variables;
    for (let i = 0; i < 64; i++)
      v.setVariableOutOfBand({ owner: ORG, repo: "api" }, `PEOPLE_${String(i).padStart(2, "0")}`, "x");
    v.setVariableOutOfBand({ owner: ORG, repo: "api" }, "ZZ_TIER", "silver");
    world.pushPolicy(
      "variables:\n  ZZ_TIER: { value: gold, repositories: [api] }\n  ZZ_NEW: { value: n, repositories: [api] }\n",
    );
    const requests = world.mark();
    const result = await world.sync({ dryRun: true });
    // ZZ_TIER is a person's variable: without adopt it is a conflict, not an update.
    expect(result.rows.map((r) => [r.name, r.action, r.conflict ?? false])).toEqual([
      ["ZZ_NEW", "create", false],
      ["ZZ_TIER", "unchanged", true],
    ]);
    const pages = requests().filter((r) => r.path === `/repos/${ORG}/api/actions/variables`);
    expect(pages.map((r) => new URLSearchParams(r.query).get("per_page"))).toEqual(["30", "30", "30"]);
    expect(pages.map((r) => new URLSearchParams(r.query).get("page"))).toEqual(["1", "2", "3"]);
    expect(requests().filter((r) => r.method !== "GET")).toEqual([]);
  });

  it("gives a repository added later its secrets and adds it to selected org secrets", async () => {
    world = await fullWorld();
    await world.sync();
    const { h } = world;
    const repo = h.control.createRepo({ owner: ORG, name: "web-shop" });
    h.control.createRepo({ owner: ORG, name: "service-c" });
    const requests = world.mark();
    const result = await world.sync({ onlyRepos: ["web-shop"] });
    expect(result.failures).toEqual([]);
    expect(result.applied.map((r) => [r.key, r.changes])).toEqual([["secret/org/NPM_TOKEN", ["repositories"]]]);
    // Access is granted to the one repository; the list is not replaced.
    expect(
      requests()
        .filter((r) => r.method !== "GET")
        .map((r) => `${r.method} ${r.path} ${r.status}`),
    ).toEqual([`PUT /orgs/${ORG}/actions/secrets/NPM_TOKEN/repositories/${repo.id} 204`]);
    expect(h.domains.secrets.get({ kind: "org", org: ORG }, "NPM_TOKEN")!.selected).toContain(repo.id);
    // service-c was out of reach of that run; a full sync picks it up.
    const full = await world.sync();
    expect(full.applied.map((r) => r.key)).toEqual(["secret/repo/service-c/DEPLOY_KEY"]);
  });

  it("reports a failing repository without stopping the others", async () => {
    const repos = Array.from({ length: 40 }, (_, i) => `svc-${String(i).padStart(2, "0")}`);
    world = await createWorld({ repos, env: { ...SECRET_ENV } });
    world.h.control.setFault(`PUT /repos/${ORG}/svc-17/actions/secrets/*`, { status: 500 });
    world.h.control.setFault(`GET /repos/${ORG}/svc-23/actions/secrets`, { status: 502 });
    world.pushPolicy("secrets:\n  NPM_TOKEN: { from: env:STEWARD_SECRET_NPM_TOKEN, repositories: ['svc-*'] }\n");
    const result = await world.sync();
    expect(result.failures.map((f) => [f.scope, f.action, f.error])).toEqual(
      expect.arrayContaining([
        [{ level: "repo", repo: "svc-17" }, "create", expect.stringMatching(/^500 /)],
        [{ level: "repo", repo: "svc-23" }, "read", expect.stringMatching(/^502 /)],
      ]),
    );
    expect(result.failures).toHaveLength(2);
    expect(result.applied).toHaveLength(38);
    world.h.control.clearFaults();
    const retry = await world.sync();
    expect(retry.applied.map((r) => r.scope)).toEqual([
      { level: "repo", repo: "svc-17" },
      { level: "repo", repo: "svc-23" },
    ]);
    for (const f of result.failures) expect(f.error).not.toContain(SECRET_ENV.STEWARD_SECRET_NPM_TOKEN);
  });

  it("waits out a short rate limit hit mid-sync and finishes in the same run", async () => {
    const repos = Array.from({ length: 12 }, (_, i) => `r${i}`);
    world = await createWorld({ repos, env: { ...SECRET_ENV } });
    world.pushPolicy("secrets:\n  NPM_TOKEN: { from: env:STEWARD_SECRET_NPM_TOKEN, repositories: ['r*'] }\n");
    world.h.control.setSecondaryLimit({ status: 403, retryAfterSec: 1, everyN: 25 });
    const requests = world.mark();
    const result = await world.sync({ fanOut: { concurrency: 4 } });
    world.h.control.setSecondaryLimit(null);
    expect(requests().filter((r) => r.status === 403).length).toBeGreaterThan(0);
    expect(result.failures).toEqual([]);
    expect(result.pausedUntil).toBeUndefined();
    expect(result.applied).toHaveLength(12);
    for (const r of repos)
      expect(world.h.domains.secrets.openedValue({ owner: ORG, repo: r }, "NPM_TOKEN")).toBe("npm-token-value-1");
  });

  it("stops at a long rate limit and resumes where it stopped", async () => {
    const repos = Array.from({ length: 30 }, (_, i) => `r${String(i).padStart(2, "0")}`);
    world = await createWorld({ repos, env: { ...SECRET_ENV } });
    world.pushPolicy("secrets:\n  NPM_TOKEN: { from: env:STEWARD_SECRET_NPM_TOKEN, repositories: ['r*'] }\n");
    const { h, installationId } = world;
    const resetAt = new Date(h.control.now().getTime() + 3_600_000);
    // Enough budget for the reads and part of the writes, until the tenth kept for acting (60).
    h.control.setRateLimit(installationId, { limit: 600, remaining: 130, resetAt });
    const first = await world.sync({ fanOut: { concurrency: 2 } });
    expect(first.pausedUntil).toBeDefined();
    expect(first.pausedUntil!.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
    const done = first.applied.length;
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(30);
    expect(first.failures).toEqual([]);
    // The check run and the CLI say until when, in GitHub's words for it.
    const until = /Delayed by GitHub's rate limit until (\d{4}-\d\d-\d\d )?\d\d:\d\d UTC; the rest continues then\./;
    expect(syncSummary(first).summary).toMatch(until);
    expect(textReport(first)).toMatch(/delayed by GitHub's rate limit until (\d{4}-\d\d-\d\d )?\d\d:\d\d UTC/);
    const writtenBefore = repos.filter((r) => h.domains.secrets.writesTo({ owner: ORG, repo: r }) > 0);

    // The window resets; the next run does only the rest.
    h.control.setRateLimit(installationId, { limit: 5000, remaining: 5000 });
    const second = await world.sync();
    expect(second.failures).toEqual([]);
    expect(second.applied).toHaveLength(30 - writtenBefore.length);
    for (const r of repos) {
      expect(h.domains.secrets.writesTo({ owner: ORG, repo: r })).toBe(1);
      expect(h.domains.secrets.openedValue({ owner: ORG, repo: r }, "NPM_TOKEN")).toBe("npm-token-value-1");
    }
  });
});
