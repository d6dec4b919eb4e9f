// The policy loader against the sandbox hub: real contents API answers (404s, ETags and 304s
// on conditional reads), through the service's own API client.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createOctokitFactory } from "../../src/api/client.js";
import { inProcessCoordination } from "../../src/coordination/in-process.js";
import type { InstallationOctokit } from "../../src/handler.js";
import { loadConfig } from "../../src/config/env.js";
import { createPolicyLoader } from "../../src/policy/loader.js";
import { createHub, STEWARD_PERMISSIONS, type HubHandle } from "../../src/sandbox/hub.js";
import { testHandlers } from "./fixtures.js";

const logger = pino({ level: "silent" });
let hub: HubHandle;
let dir: string;
let octokit: InstallationOctokit;
let clock = 0;
const loaderFor = () =>
  createPolicyLoader({ adminRepo: ".github", handlers: testHandlers, logger, freshMs: 1000, now: () => clock });
const contentGets = () => hub.control.requests().filter((r) => r.method === "GET" && r.path.includes("/contents/"));
/** Put a file on a branch (default: the default branch); answers the commit's SHA. */
const setFile = (owner: string, repo: string, path: string, text: string, branch?: string) =>
  hub.control.pushFiles({ owner, repo, files: { [path]: text }, ...(branch ? { branch } : {}) }).sha;
const gh = { octokit: () => octokit };

beforeEach(async () => {
  hub = await createHub();
  // The hub seeds the demo organisation (acme, with acme/web); the rest is added here.
  for (const name of ["web", "api", ".github"])
    if (!hub.control.repo("acme", name)) hub.control.createRepo({ owner: "acme", name });
  const installation =
    hub.control.installation("acme") ??
    hub.control.install("acme", { permissions: STEWARD_PERMISSIONS, repositories: "all" });
  dir = await mkdtemp(join(tmpdir(), "steward-loader-"));
  // No retries: a failed read must reach the loader as it was answered.
  const config = loadConfig({ ...hub.env, PRIVATE_KEY: undefined, STEWARD_DATA_DIR: dir, LOG_LEVEL: "silent" });
  octokit = await createOctokitFactory({
    config,
    logger,
    coordination: inProcessCoordination(),
    retries: 0,
    writeIntervalMs: 0,
  }).octokitFor(installation.id);
  clock = 0;
});
afterEach(async () => {
  await hub.close();
  await rm(dir, { recursive: true, force: true });
});

describe("policy loader", () => {
  it("merges the admin repository's file under the repository's file with defaults", async () => {
    setFile("acme", ".github", ".github/steward.yml", "rerun:\n  max_attempts: 4\n  branches: [main, develop]\n");
    setFile("acme", "web", ".github/steward.yml", "rerun:\n  branches: [trunk]\n");
    const policy = await loaderFor().load(gh.octokit(), { owner: "acme", repo: "web" });
    expect(policy.problems).toEqual([]);
    expect(policy.sources).toEqual(["acme/.github:.github/steward.yml", "acme/web:.github/steward.yml"]);
    expect(policy.sections).toEqual({
      rerun: { enabled: true, max_attempts: 4, branches: ["trunk"], rules: [] },
      checks: { config: true },
    });
  });

  it("answers defaults when neither file exists (404)", async () => {
    const policy = await loaderFor().load(gh.octokit(), { owner: "acme", repo: "web" });
    expect(policy).toEqual({
      sections: { rerun: { enabled: true, max_attempts: 2, branches: ["main"], rules: [] }, checks: { config: true } },
      problems: [],
      sources: [],
      given: [],
    });
  });

  it("reads the repository file at a given ref, the org file at its default branch", async () => {
    setFile("acme", "web", ".github/steward.yml", "checks:\n  config: false\n", "feature");
    const policy = await loaderFor().load(gh.octokit(), { owner: "acme", repo: "web", ref: "feature" });
    expect(policy.sections.checks).toEqual({ config: false });
    expect(
      contentGets()
        .map((r) => `${decodeURIComponent(r.path)}?ref=${new URLSearchParams(r.query).get("ref")}`)
        .sort(),
    ).toEqual([
      "/repos/acme/.github/contents/.github/steward.yml?ref=null",
      "/repos/acme/web/contents/.github/steward.yml?ref=feature",
    ]);
  });

  it("reads the admin repository's own file once, not as org and repository file both", async () => {
    setFile("acme", ".github", ".github/steward.yml", "rerun:\n  max_atempts: 1\n");
    const policy = await loaderFor().load(gh.octokit(), { owner: "acme", repo: ".github" });
    expect(policy.problems).toHaveLength(1);
    expect(contentGets()).toHaveLength(1);
  });

  it("serves from cache while fresh, then revalidates with If-None-Match and gets 304", async () => {
    setFile("acme", "web", ".github/steward.yml", "checks:\n  config: false\n");
    const loader = loaderFor();
    const first = await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    expect(contentGets()).toHaveLength(2);
    await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    expect(contentGets()).toHaveLength(2);
    clock += 5000;
    const again = await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    // The admin repository has no file: known missing, it is not asked for again (see below).
    const revalidations = contentGets().slice(2);
    expect(revalidations.map((r) => r.status)).toEqual([304]);
    // A 304 is only ever the answer to a conditional read: the loader sent the ETag it kept.
    expect(revalidations.find((r) => r.path.includes("/web/"))!.status).toBe(304);
    expect(again).toBe(first);
  });

  it("keeps a missing file known missing past its freshness until invalidated, then finds it", async () => {
    const loader = loaderFor();
    await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    expect(contentGets().map((r) => r.status)).toEqual([404, 404]);
    // The file appears without Steward being told: a present file would be revalidated by now.
    setFile("acme", "web", ".github/steward.yml", "checks:\n  config: false\n");
    clock += 10 * 60_000;
    expect((await loader.load(gh.octokit(), { owner: "acme", repo: "web" })).sections.checks).toEqual({
      config: true,
    });
    expect(contentGets()).toHaveLength(2);
    // The push touching it (or a repository event) invalidates: read again, and found.
    loader.invalidate("acme", "web");
    expect((await loader.load(gh.octokit(), { owner: "acme", repo: "web" })).sections.checks).toEqual({
      config: false,
    });
    expect(contentGets().map((r) => r.status)).toEqual([404, 404, 200]);
  });

  it("asks again for a missing file after the backstop (an event another replica ran)", async () => {
    const loader = createPolicyLoader({
      adminRepo: ".github",
      handlers: testHandlers,
      logger,
      freshMs: 1000,
      missingFreshMs: 60_000,
      now: () => clock,
    });
    await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    clock += 59_000;
    await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    expect(contentGets()).toHaveLength(2);
    setFile("acme", "web", ".github/steward.yml", "checks:\n  config: false\n");
    clock += 2_000;
    const after = await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    expect(after.sections.checks).toEqual({ config: false });
    expect(contentGets().map((r) => r.status)).toEqual([404, 404, 404, 200]);
  });

  it("with replicas (missingFreshMs 0) asks again for a missing file as soon as for a found one", async () => {
    const loader = createPolicyLoader({
      adminRepo: ".github",
      handlers: testHandlers,
      logger,
      freshMs: 1000,
      missingFreshMs: 0,
      now: () => clock,
    });
    await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    // Added, and the push that added it ran on another replica: nothing invalidated this one.
    setFile("acme", "web", ".github/steward.yml", "checks:\n  config: false\n");
    clock += 1_001;
    const after = await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    expect(after.sections.checks).toEqual({ config: false });
    expect(contentGets().map((r) => r.status)).toEqual([404, 404, 404, 200]);
  });

  it("refetches after invalidate and sees the new content", async () => {
    setFile("acme", "web", ".github/steward.yml", "checks:\n  config: false\n");
    const loader = loaderFor();
    await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    setFile("acme", "web", ".github/steward.yml", "checks:\n  config: true\n");
    expect((await loader.load(gh.octokit(), { owner: "acme", repo: "web" })).sections.checks).toEqual({
      config: false,
    });
    loader.invalidate("ACME", "Web");
    const after = await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    expect(after.sections.checks).toEqual({ config: true });
    expect(contentGets().at(-1)!.status).toBe(200);
  });

  it("invalidating the admin repository refreshes every repository's org layer", async () => {
    setFile("acme", ".github", ".github/steward.yml", "checks:\n  config: false\n");
    const loader = loaderFor();
    expect((await loader.load(gh.octokit(), { owner: "acme", repo: "web" })).sections.checks).toEqual({
      config: false,
    });
    setFile("acme", ".github", ".github/steward.yml", "checks:\n  config: true\n");
    loader.invalidate("acme", ".github");
    expect((await loader.load(gh.octokit(), { owner: "acme", repo: "api" })).sections.checks).toEqual({ config: true });
    expect((await loader.load(gh.octokit(), { owner: "acme", repo: "web" })).sections.checks).toEqual({ config: true });
  });

  it("never refetches a file at a commit SHA", async () => {
    const SHA = setFile("acme", "web", ".github/steward.yml", "checks: {config: false}\n");
    const loader = loaderFor();
    await loader.load(gh.octokit(), { owner: "acme", repo: "web", ref: SHA });
    clock += 1_000_000;
    loader.invalidate("acme", "web");
    await loader.load(gh.octokit(), { owner: "acme", repo: "web", ref: SHA });
    expect(contentGets().filter((r) => r.path.includes("/web/"))).toHaveLength(1);
  });

  it("shares one request between concurrent loads", async () => {
    const loader = loaderFor();
    await Promise.all([1, 2, 3, 4].map(() => loader.load(gh.octokit(), { owner: "acme", repo: "web" })));
    expect(contentGets()).toHaveLength(2);
  });

  it("reports problems with the file they are in and drops the broken section", async () => {
    setFile("acme", "web", ".github/steward.yml", "checks:\n  config: false\nrerun:\n  max_atempts: 3\n");
    const policy = await loaderFor().load(gh.octokit(), { owner: "acme", repo: "web" });
    expect(policy.sections).toEqual({ checks: { config: false } });
    expect(policy.problems).toMatchObject([
      { file: "acme/web:.github/steward.yml", line: 4, column: 3, suggestion: "max_attempts" },
    ]);
  });

  it("keeps the cached copy when the API fails on revalidation, and throws when there is none", async () => {
    setFile("acme", "web", ".github/steward.yml", "checks:\n  config: false\n");
    const loader = loaderFor();
    await loader.load(gh.octokit(), { owner: "acme", repo: "web" });
    clock += 5000;
    hub.control.setFault("GET /repos/acme/web/contents/*", { status: 502, times: 1 });
    expect((await loader.load(gh.octokit(), { owner: "acme", repo: "web" })).sections.checks).toEqual({
      config: false,
    });
    expect(contentGets().some((r) => r.path.startsWith("/repos/acme/web/") && r.status === 502)).toBe(true);
    hub.control.setFault("GET /repos/acme/api/contents/*", { status: 502 });
    await expect(loader.load(gh.octokit(), { owner: "acme", repo: "api" })).rejects.toMatchObject({ status: 502 });
  });

  it("loads an admin document with defaults, and reports its problems", async () => {
    const loader = loaderFor();
    const path = ".github/steward/secrets.yml";
    expect(await loader.loadDocument(gh.octokit(), { owner: "acme", path })).toEqual({
      value: { secrets: [] },
      problems: [],
      found: false,
    });
    setFile("acme", ".github", path, "secrets:\n  - name: NPM_TOKEN\n    repositories: ['web-*']\n");
    loader.invalidate("acme", ".github");
    expect(await loader.loadDocument(gh.octokit(), { owner: "acme", path })).toEqual({
      value: { secrets: [{ name: "NPM_TOKEN", repositories: ["web-*"] }] },
      problems: [],
      found: true,
    });
    setFile("acme", ".github", path, "secrets:\n  - nme: NPM_TOKEN\n");
    loader.invalidate("acme", ".github");
    const bad = await loader.loadDocument(gh.octokit(), { owner: "acme", path });
    expect(bad.value).toBeUndefined();
    expect(bad.found).toBe(true);
    expect(bad.problems.map((p) => `${p.file}:${p.line}:${p.column}`)).toContain(
      "acme/.github:.github/steward/secrets.yml:2:5",
    );
  });
});
