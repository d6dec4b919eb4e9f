// Steward's API client against the sandbox hub: installation tokens minted by the hub for a
// real app JWT, its rate limits (primary and secondary), faults (5xx, dropped connections),
// renamed repositories (301/307), pagination and log redirects.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createOctokitFactory, downloadWithoutAuth } from "../../src/api/client.js";
import { BudgetReserved } from "../../src/api/rate-limit.js";
import { delayedText, rateLimitedUntil } from "../../src/api/rate-limit.js";
import { inProcessCoordination } from "../../src/coordination/in-process.js";
import { createTokenCache } from "../../src/coordination/token-cache.js";
import { scrub } from "../../src/log/redact.js";
import { runWithSignal } from "../../src/lifecycle/abort-scope.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { collectingLogger, testConfig } from "./helpers.js";
import { expectStoppedWith } from "../support/stopped.js";

let hub: HubHandle;
let observed: {
  who: number | "app";
  status: number;
  remaining?: number;
  window?: { limit?: number; resetAt?: number };
}[];
let logs: () => string;
let acme: number;
/** Times the client decided to wait out a primary rate limit, as its log says. */
const rateLimitWaits = () => logs().split("primary rate limit reached").length - 1;

function factory(
  extra: {
    writeIntervalMs?: number;
    maxInstallations?: number;
    signal?: AbortSignal;
    maxRateLimitWaitSeconds?: number;
  } = {},
) {
  const { logger, output } = collectingLogger();
  logs = output;
  return createOctokitFactory({
    config: testConfig({ appId: Number(hub.env.APP_ID), privateKey: hub.env.PRIVATE_KEY, apiUrl: hub.url }),
    logger,
    coordination: inProcessCoordination(),
    observe: { request: (who, status, remaining, window) => observed.push({ who, status, remaining, window }) },
    writeIntervalMs: extra.writeIntervalMs ?? 0,
    ...(extra.maxInstallations ? { maxInstallations: extra.maxInstallations } : {}),
    ...(extra.signal ? { signal: extra.signal } : {}),
    ...(extra.maxRateLimitWaitSeconds ? { maxRateLimitWaitSeconds: extra.maxRateLimitWaitSeconds } : {}),
  });
}

const hits = (path: string) => hub.control.requests().filter((r) => r.path === path);
const getRepo = (
  octokit: { request: (route: string, params: Record<string, unknown>) => Promise<{ status: number; data: any }> },
  repo: string,
) => octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo });

beforeEach(async () => {
  hub = await createHub();
  acme = hub.control.installation("acme")!.id;
  observed = [];
});
afterEach(async () => {
  await hub.close();
});

describe("API client", () => {
  it("requests one installation token per installation and reuses it for many calls", async () => {
    hub.control.createOrg("beta", { owners: ["octo-admin"] });
    hub.control.createRepo({ owner: "beta", name: "app", private: true });
    const beta = hub.control.install("beta", { repositories: "all" }).id;
    const octokits = factory();
    const one = await octokits.octokitFor(acme);
    expect(await octokits.octokitFor(acme)).toBe(one);
    // acme/api and beta/app are private: each answers 200 only to its own installation's token.
    for (let i = 0; i < 5; i++) expect((await getRepo(one, "api")).status).toBe(200);
    const two = await octokits.octokitFor(beta);
    expect(two).not.toBe(one);
    await Promise.all([1, 2, 3].map(() => two.request("GET /repos/{owner}/{repo}", { owner: "beta", repo: "app" })));
    await expect(two.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "api" })).rejects.toMatchObject({
      status: 404,
    });

    expect(hits(`/app/installations/${acme}/access_tokens`)).toHaveLength(1);
    expect(hits(`/app/installations/${beta}/access_tokens`)).toHaveLength(1);
    expect(hits("/repos/acme/api").map((r) => [r.auth, r.status])).toEqual([
      ...Array(5).fill(["installation", 200]),
      ["installation", 404],
    ]);
    // Rate-limit state is observed per installation, as the hub counts it down.
    expect(observed.filter((o) => o.who === acme && o.status === 200).map((o) => o.remaining)).toEqual([
      4999, 4998, 4997, 4996, 4995,
    ]);
    expect(observed.filter((o) => o.who === beta && o.status === 200)).toHaveLength(3);
    // The tokens it saw are now masked wherever they would be logged.
    const { token: token1 } = (await one.auth({ type: "installation" })) as { token: string };
    const { token: token2 } = (await two.auth({ type: "installation" })) as { token: string };
    expect(token1).not.toBe(token2);
    expect(scrub(`oops ${token1} and ${token2}`)).toBe("oops [REDACTED] and [REDACTED]");
    expect(logs()).not.toContain(token1);
  });

  it("keeps the clients of the installations used last; one let go is built again and its token reused", async () => {
    const installed = ["beta", "gamma"].map((org) => {
      hub.control.createOrg(org, { owners: ["octo-admin"] });
      hub.control.createRepo({ owner: org, name: "app", private: true });
      return hub.control.install(org, { repositories: "all" }).id;
    });
    const [beta, gamma] = installed as [number, number];
    const octokits = factory({ maxInstallations: 2 });
    const forAcme = await octokits.octokitFor(acme);
    const forBeta = await octokits.octokitFor(beta);
    expect((await forBeta.request("GET /repos/{owner}/{repo}", { owner: "beta", repo: "app" })).status).toBe(200);
    // Used again, acme's client is the newest: gamma's arrival lets beta's go, not acme's.
    expect(await octokits.octokitFor(acme)).toBe(forAcme);
    const forGamma = await octokits.octokitFor(gamma);
    expect(await octokits.octokitFor(acme)).toBe(forAcme);
    expect(await octokits.octokitFor(gamma)).toBe(forGamma);
    const betaAgain = await octokits.octokitFor(beta);
    expect(betaAgain).not.toBe(forBeta);
    // Both work: the one a run still holds and the one built again, on the token minted first.
    expect((await forBeta.request("GET /repos/{owner}/{repo}", { owner: "beta", repo: "app" })).status).toBe(200);
    expect((await betaAgain.request("GET /repos/{owner}/{repo}", { owner: "beta", repo: "app" })).status).toBe(200);
    expect(hits(`/app/installations/${beta}/access_tokens`)).toHaveLength(1);
    // Beta's arrival let acme's go (gamma was used after it).
    expect(await octokits.octokitFor(gamma)).toBe(forGamma);
    expect(await octokits.octokitFor(acme)).not.toBe(forAcme);
  });

  it("sends steward's User-Agent and the vnd.github+json media type", async () => {
    const app = await factory().appOctokit();
    expect((await app.request("GET /app")).data?.id).toBe(Number(hub.env.APP_ID));
    const [call] = hits("/app");
    expect(call!.userAgent).toMatch(/^steward\/\d+\.\d+\.\d+/);
    expect(call!.accept).toBe("application/vnd.github+json");
    // The hub answered /app, which only a valid app JWT (a bearer token) may read.
    expect(call).toMatchObject({ auth: "app", authorization: true, status: 200 });
  });

  it("honours Retry-After on a 403 secondary rate limit and retries", async () => {
    const octokit = await factory().octokitFor(acme);
    await octokit.auth({ type: "installation" }); // the token first: the limit is for the call below
    hub.control.setSecondaryLimit({ status: 403, retryAfterSec: 1, nextN: 1 });
    const response = await getRepo(octokit, "web");
    expect(response.status).toBe(200);
    const [first, second] = hits("/repos/acme/web");
    expect(first!.status).toBe(403);
    expect(second!.receivedAt - first!.at).toBeGreaterThanOrEqual(950);
  });

  it("waits longer each time a request meets a secondary limit again: Retry-After, then twice that", async () => {
    const octokit = await factory().octokitFor(acme);
    await octokit.auth({ type: "installation" });
    hub.control.setSecondaryLimit({ status: 429, retryAfterSec: 1, nextN: 2 });
    const response = await getRepo(octokit, "web");
    expect(response.status).toBe(200);
    const tries = hits("/repos/acme/web");
    expect(tries.map((r) => r.status)).toEqual([429, 429, 200]);
    expect(tries[1]!.receivedAt - tries[0]!.at).toBeGreaterThanOrEqual(950);
    expect(tries[2]!.receivedAt - tries[1]!.at).toBeGreaterThanOrEqual(1_950);
  });

  it("fails at once with the limit's answer when the reset is further away than it waits", async () => {
    const octokit = await factory({ maxRateLimitWaitSeconds: 60 }).octokitFor(acme);
    await octokit.auth({ type: "installation" });
    const resetAt = new Date(Date.now() + 10 * 60_000);
    hub.control.setRateLimit(acme, { limit: 5000, remaining: 0, resetAt });
    const error = (await getRepo(octokit, "web").catch((e: unknown) => e)) as {
      status?: number;
      response?: { headers: Record<string, string> };
    };
    expect(error.status).toBe(403);
    // What a caller needs to schedule the rest for later.
    expect(Number(error.response!.headers["x-ratelimit-reset"])).toBe(Math.floor(resetAt.getTime() / 1000));
    expect(hits("/repos/acme/web").map((r) => r.status)).toEqual([403]);
    expect(logs()).toContain("primary rate limit reached");
  });

  it("waits for the primary rate limit to reset, then retries", async () => {
    const octokit = await factory().octokitFor(acme);
    // 2-3 s ahead (not 1-2 s): the first request must still meet the limit on a loaded machine.
    const resetAt = new Date((Math.floor(Date.now() / 1000) + 3) * 1000);
    hub.control.setRateLimit(acme, { limit: 5000, remaining: 0, resetAt });
    const response = await getRepo(octokit, "web");
    expect(response.status).toBe(200);
    const [refused, retried] = hits("/repos/acme/web");
    expect(refused!.status).toBe(403);
    expect(retried!.receivedAt).toBeGreaterThanOrEqual(resetAt.getTime());
    expect(observed.some((o) => o.who === acme && o.status === 403 && o.remaining === 0)).toBe(true);
  });

  it("gives up waiting out a rate limit when the process stops, without sending the request again", async () => {
    const stop = new AbortController();
    const octokit = await factory({ signal: stop.signal, maxRateLimitWaitSeconds: 60 }).octokitFor(acme);
    await octokit.auth({ type: "installation" });
    // Reset half a minute ahead: within this client's longest wait (a minute), so it waits rather than failing.
    hub.control.setRateLimit(acme, { limit: 5000, remaining: 0, resetAt: new Date(Date.now() + 30_000) });
    const waitsBefore = rateLimitWaits();
    const pending = getRepo(octokit, "web");
    // Stopped once the refusal is in and the client has decided to wait.
    while (rateLimitWaits() === waitsBefore) await new Promise((r) => setTimeout(r, 10));
    stop.abort(new Error("steward is stopping"));
    await expect(pending).rejects.toThrow("steward is stopping");
    expect(hits("/repos/acme/web").map((r) => r.status)).toEqual([403]);
  });

  it("gives up waiting out a rate limit when the work that made the request is told to stop", async () => {
    const octokit = await factory({ maxRateLimitWaitSeconds: 60 }).octokitFor(acme);
    await octokit.auth({ type: "installation" });
    hub.control.setRateLimit(acme, { limit: 5000, remaining: 0, resetAt: new Date(Date.now() + 30_000) });
    const work = new AbortController();
    const waitsBefore = rateLimitWaits();
    const pending = runWithSignal(work.signal, () => getRepo(octokit, "web"));
    while (rateLimitWaits() === waitsBefore) await new Promise((r) => setTimeout(r, 10));
    work.abort(new Error("delivery cancelled"));
    await expectStoppedWith(pending, "delivery cancelled");
    expect(hits("/repos/acme/web").map((r) => r.status)).toEqual([403]);
  });

  it("sends an installation's writes one at a time, each the write interval after the previous answer", async () => {
    const octokit = await factory({ writeIntervalMs: 300 }).octokitFor(acme);
    await octokit.auth({ type: "installation" });
    // Each write takes longer than the interval: a turn that ended when the write was sent, not
    // answered, would let the next one leave while this one is still in flight.
    hub.control.setFault("POST /repos/{owner}/{repo}/actions/variables", { latencyMs: 400 });
    const create = (name: string) =>
      octokit.request("POST /repos/{owner}/{repo}/actions/variables", { owner: "acme", repo: "web", name, value: "1" });
    await Promise.all([create("A"), create("B"), create("C")]);
    const writes = hits("/repos/acme/web/actions/variables").filter((r) => r.method === "POST");
    expect(writes.map((w) => w.status)).toEqual([201, 201, 201]);
    for (let i = 1; i < writes.length; i++) {
      // The hub's clock is milliseconds: 1 ms of slack for the rounding of both stamps.
      expect(writes[i]!.receivedAt - writes[i - 1]!.at).toBeGreaterThanOrEqual(299);
    }
  });

  it("sends a write that answers a waiting run ahead of the installation's queued reports", async () => {
    const octokit = await factory({ writeIntervalMs: 100 }).octokitFor(acme);
    await octokit.auth({ type: "installation" });
    const sha = hub.control.pushFiles({ owner: "acme", repo: "web", files: { "a.txt": "a\n" } }).sha;
    const report = (name: string) =>
      octokit.request("POST /repos/{owner}/{repo}/check-runs", { owner: "acme", repo: "web", name, head_sha: sha });
    // Four reports asked first, then a re-run: the re-run goes as soon as the report in flight is answered.
    const calls = [report("one"), report("two"), report("three"), report("four")];
    const rerun = octokit
      .request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs", {
        owner: "acme",
        repo: "web",
        run_id: 999_999,
      })
      .catch((e: { status: number }) => e.status);
    await Promise.all([...calls, rerun]);
    const writes = hub.control.requests().filter((r) => r.method === "POST" && r.path.startsWith("/repos/acme/web/"));
    expect(writes.map((w) => w.path.replace("/repos/acme/web/", ""))).toEqual([
      "check-runs",
      "actions/runs/999999/rerun-failed-jobs",
      "check-runs",
      "check-runs",
      "check-runs",
    ]);
    // Still one at a time, each the interval after the previous answer.
    for (let i = 1; i < writes.length; i++)
      expect(writes[i]!.receivedAt - writes[i - 1]!.at).toBeGreaterThanOrEqual(99);
  });

  it("as the budget runs low, re-runs, deployment answers and reads go on; reports and syncs wait for the reset", async () => {
    const octokits = factory();
    const octokit = await octokits.octokitFor(acme);
    await octokit.auth({ type: "installation" });
    const resetAt = new Date(Date.now() + 3_600_000);
    // 300 of 5,000 left: under the tenth kept for acting.
    hub.control.setRateLimit(acme, { limit: 5000, remaining: 300, resetAt });
    expect((await getRepo(octokit, "web")).status).toBe(200);
    const sha = hub.control.pushFiles({ owner: "acme", repo: "web", files: { "a.txt": "a\n" } }).sha;
    const report = await octokit
      .request("POST /repos/{owner}/{repo}/check-runs", {
        owner: "acme",
        repo: "web",
        name: "steward/rerun",
        head_sha: sha,
      })
      .catch((e: unknown) => e);
    const sync = await octokit
      .request("GET /repos/{owner}/{repo}/actions/variables", { owner: "acme", repo: "web" })
      .catch((e: unknown) => e);
    for (const held of [report, sync]) {
      expect(held).toBeInstanceOf(BudgetReserved);
      // Read as GitHub's own "not now": retried at the reset (plus its margin), not before and not in a loop.
      const until = rateLimitedUntil(held)!;
      expect(until.getTime()).toBeGreaterThanOrEqual(resetAt.getTime());
      expect(until.getTime()).toBeLessThan(resetAt.getTime() + 30_000);
      expect(delayedText(held, until)).toMatch(
        /^delayed by GitHub's rate limit until .*UTC: the rest of this installation's budget is kept for re-runs and deployment answers$/,
      );
    }
    expect(hits("/repos/acme/web/check-runs")).toEqual([]);
    expect(hits("/repos/acme/web/actions/variables")).toEqual([]);
    // The acting write and the reads that decide it are sent (the run does not exist: the hub's 404 is its answer).
    const rerun = await octokit
      .request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs", {
        owner: "acme",
        repo: "web",
        run_id: 424242,
      })
      .catch((e: unknown) => e);
    expect((rerun as { status?: number }).status).toBe(404);
    expect(hits("/repos/acme/web/actions/runs/424242/rerun-failed-jobs")).toHaveLength(1);
    expect(
      (
        await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
          owner: "acme",
          repo: "web",
          ref: sha,
        })
      ).status,
    ).toBe(200);
    // Another installation's budget is its own.
    hub.control.createOrg("beta", { owners: ["octo-admin"] });
    hub.control.createRepo({ owner: "beta", name: "api" });
    const beta = await octokits.octokitFor(
      hub.control.install("beta", { repositories: "all", permissions: { checks: "write", metadata: "read" } }).id,
    );
    const betaSha = hub.control.pushFiles({ owner: "beta", repo: "api", files: { "a.txt": "a\n" } }).sha;
    expect(
      (
        await beta.request("POST /repos/{owner}/{repo}/check-runs", {
          owner: "beta",
          repo: "api",
          name: "x",
          head_sha: betaSha,
        })
      ).status,
    ).toBe(201);
  });

  it("a new window lifts the hold with the first answer that shows it", async () => {
    const octokit = await factory().octokitFor(acme);
    await octokit.auth({ type: "installation" });
    const sha = hub.control.pushFiles({ owner: "acme", repo: "web", files: { "a.txt": "a\n" } }).sha;
    const report = () =>
      octokit.request("POST /repos/{owner}/{repo}/check-runs", {
        owner: "acme",
        repo: "web",
        name: "x",
        head_sha: sha,
      });
    hub.control.setRateLimit(acme, { limit: 5000, remaining: 10, resetAt: new Date(Date.now() + 3_600_000) });
    expect((await getRepo(octokit, "web")).status).toBe(200);
    expect(await report().catch((e: unknown) => e)).toBeInstanceOf(BudgetReserved);
    hub.control.setRateLimit(acme, { limit: 5000, remaining: 5000 });
    // Acting reads are never held; the answer shows the new window.
    expect((await getRepo(octokit, "web")).status).toBe(200);
    expect((await report()).status).toBe(201);
  });

  it("reports the window's reset on this machine's clock, whatever GitHub's clock says", async () => {
    const octokit = await factory().octokitFor(acme);
    await octokit.auth({ type: "installation" });
    // GitHub's clock half an hour ahead of this machine's (within the token's hour); its window resets ten minutes after its now.
    hub.control.setClock(new Date(Date.now() + 1_800_000));
    hub.control.setRateLimit(acme, {
      limit: 5000,
      remaining: 4321,
      resetAt: new Date(hub.control.now().getTime() + 600_000),
    });
    const before = Date.now();
    expect((await getRepo(octokit, "web")).status).toBe(200);
    const seen = observed.at(-1)!;
    expect(seen).toMatchObject({ who: acme, status: 200, remaining: 4320, window: { limit: 5000 } });
    // Ten minutes from now here (and a second's margin), give or take the hub's whole-second reset.
    expect(seen.window!.resetAt!).toBeGreaterThanOrEqual(before + 600_000 - 1_000);
    expect(seen.window!.resetAt!).toBeLessThanOrEqual(Date.now() + 600_000 + 1_000);
  });

  it("acting requests are not held once the budget is spent: GitHub's refusal says until when", async () => {
    const octokit = await factory().octokitFor(acme);
    await octokit.auth({ type: "installation" });
    const resetAt = new Date(Date.now() + 3_600_000);
    hub.control.setRateLimit(acme, { limit: 5000, remaining: 1, resetAt });
    expect((await getRepo(octokit, "web")).status).toBe(200);
    const refused = (await getRepo(octokit, "api").catch((e: unknown) => e)) as { status?: number };
    expect(refused.status).toBe(403);
    expect(rateLimitedUntil(refused)!.getTime()).toBeGreaterThanOrEqual(resetAt.getTime());
    expect(hits("/repos/acme/api").map((r) => r.status)).toEqual([403]);
  });

  it("retries 5xx answers", async () => {
    const octokit = await factory().octokitFor(acme);
    hub.control.setFault("GET /repos/{owner}/{repo}", { status: 502, times: 1 });
    const response = await getRepo(octokit, "web");
    expect(response.status).toBe(200);
    expect(hits("/repos/acme/web").map((r) => r.status)).toEqual([502, 200]);
  });

  it("a request whose work is told to stop while it waits to be retried is not sent again", async () => {
    const octokit = await factory().octokitFor(acme);
    await octokit.auth({ type: "installation" });
    hub.control.setFault("GET /repos/{owner}/{repo}", { status: 502, times: 1 });
    const work = new AbortController();
    const pending = runWithSignal(work.signal, () => getRepo(octokit, "web"));
    while (hits("/repos/acme/web").length === 0) await new Promise((r) => setTimeout(r, 10));
    work.abort(new Error("delivery cancelled"));
    await expectStoppedWith(pending, "delivery cancelled");
    expect(hits("/repos/acme/web").map((r) => r.status)).toEqual([502]);
  });

  it("does not retry a 404", async () => {
    const octokit = await factory().octokitFor(acme);
    await expect(getRepo(octokit, "gone")).rejects.toMatchObject({ status: 404 });
    expect(hits("/repos/acme/gone")).toHaveLength(1);
  });

  it("follows a 301 and remembers it; repeats a 307 verbatim", async () => {
    const id = hub.control.repo("acme", "api")!.id;
    const sha = hub.control.pushFiles({ owner: "acme", repo: "api", files: { "x.txt": "x\n" } }).sha;
    hub.control.renameRepo("acme", "api", "api-v2");
    const octokit = await factory().octokitFor(acme);
    const first = await getRepo(octokit, "api");
    expect(first.data).toMatchObject({ id, name: "api-v2" });
    await getRepo(octokit, "api");
    expect(hits("/repos/acme/api")).toHaveLength(1); // permanent: the second call went straight to the new URI
    // The hub serves /repositories/{id} as the repository's current path.
    expect(hits("/repos/acme/api-v2")).toHaveLength(2);

    await octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      owner: "acme",
      repo: "api",
      name: "moved",
      head_sha: sha,
    });
    expect(hits("/repos/acme/api/check-runs").map((r) => r.status)).toEqual([307]);
    const [repeated] = hits("/repos/acme/api-v2/check-runs");
    expect(repeated).toMatchObject({ method: "POST", status: 201, auth: "installation" });
    // The body went along: the hub created the run it described.
    expect(hub.domains.checks.checkRuns({ owner: "acme", repo: "api-v2", sha, name: "moved" })).toHaveLength(1);
    // Temporary: the next POST goes to the old URI again, and is repeated again.
    await octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      owner: "acme",
      repo: "api",
      name: "moved again",
      head_sha: sha,
    });
    expect(hits("/repos/acme/api/check-runs").map((r) => r.status)).toEqual([307, 307]);
    expect(hits("/repos/acme/api-v2/check-runs").map((r) => [r.method, r.status])).toEqual([
      ["POST", 201],
      ["POST", 201],
    ]);
    expect(hub.domains.checks.checkRuns({ owner: "acme", repo: "api-v2", sha, name: "moved again" })).toHaveLength(1);
  });

  it("follows Link headers when paginating", async () => {
    for (let i = 0; i < 2; i++) hub.control.createRepo({ owner: "acme", name: `extra-${i}` });
    const octokit = await factory().octokitFor(acme);
    const repos = await octokit.paginate("GET /orgs/{org}/repos", { org: "acme", per_page: 2 });
    const { data: all } = await octokit.request("GET /orgs/{org}/repos", { org: "acme", per_page: 100 });
    expect(repos.length).toBeGreaterThan(4);
    expect(repos.map((r) => r.id)).toEqual(all.map((r) => r.id));
    expect(hits("/orgs/acme/repos")).toHaveLength(Math.ceil(all.length / 2) + 1);
  });

  it("retries a request whose connection was cut (network error)", async () => {
    const octokit = await factory().octokitFor(acme);
    hub.control.setFault("GET /repos/{owner}/{repo}", { drop: true, times: 1 });
    const res = await getRepo(octokit, "web");
    expect(res.data).toMatchObject({ full_name: "acme/web" });
    expect(hits("/repos/acme/web").map((r) => r.status)).toEqual([0, 200]);
    expect(observed.some((o) => o.who === acme && o.status === 0)).toBe(true);
  });

  it("reads a log redirect manually and downloads it without the Authorization header", async () => {
    const run = hub.domains.actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "CI",
      jobs: [{ name: "test", steps: ["Run"] }],
    });
    const job = hub.domains.actions.failJob({
      runId: run.id,
      job: "test",
      step: "Run",
      log: "step 1\nError: flaky network\n",
    });
    await hub.domains.idle();
    const octokit = await factory().octokitFor(acme);
    const redirect = await octokit.request("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", {
      owner: "acme",
      repo: "web",
      job_id: job.id,
      request: { redirect: "manual" },
    });
    expect(redirect.status).toBe(302);
    // GitHub's log storage is a host on another origin; so is the hub's.
    const location = redirect.headers.location!;
    expect(new URL(location).origin).toBe(hub.blobUrl);
    expect(await downloadWithoutAuth(location)).toContain("flaky network");
    const stored = () =>
      hub.control
        .requests()
        .filter((r) => r.origin === hub.blobUrl)
        .map((r) => [r.path, r.status, r.authorization]);
    expect(stored()).toEqual([[new URL(location).pathname, 200, false]]);

    // The client following the redirect itself sends its token to the API only, never to storage.
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", {
      owner: "acme",
      repo: "web",
      job_id: job.id,
    });
    expect(String(data)).toContain("flaky network");
    expect(hits(`/repos/acme/web/actions/jobs/${job.id}/logs`).map((r) => [r.status, r.auth, r.authorization])).toEqual(
      [
        [302, "installation", true],
        [302, "installation", true],
      ],
    );
    expect(stored()).toHaveLength(2);
    expect(stored()[1]).toEqual([expect.stringMatching(/^\/_sandbox\/blobs\//), 200, false]);
    await expect(downloadWithoutAuth(`${hub.url.replace(/\d+$/, "9")}/x?sig=secret-sig`)).rejects.not.toThrow(
      /secret-sig/,
    );
  });
});

describe("concurrency", () => {
  it("has at most ten requests of an installation in flight at once; the rest leave as answers come back", async () => {
    const octokit = await factory().octokitFor(acme);
    await getRepo(octokit, "web");
    // Answers held long enough that all fifteen are sent before the first comes back, however loaded the machine.
    hub.control.setFault("GET /repos/{owner}/{repo}", { latencyMs: 3_000 });
    const before = hub.control.requests().length;
    await Promise.all(Array.from({ length: 15 }, () => getRepo(octokit, "web")));
    const sent = hub.control
      .requests()
      .slice(before)
      .filter((r) => r.path === "/repos/acme/web");
    expect(sent).toHaveLength(15);
    const firstAnswer = Math.min(...sent.map((r) => r.at));
    // Ten reached the hub before any was answered; the other five only after.
    expect(sent.filter((r) => r.receivedAt < firstAnswer)).toHaveLength(10);
  });
});

describe("downloadWithoutAuth", () => {
  it("follows a redirect to another host, and refuses a document past its bound, declared or not", async () => {
    const { createServer } = await import("node:http");
    const seen: { url: string; authorization?: string }[] = [];
    const servers = [0, 1].map(() =>
      createServer((req, res) => {
        seen.push({
          url: req.url!,
          ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        });
        if (req.url === "/moved") return void res.writeHead(307, { location: `${origins[1]}/log.txt?sig=s` }).end();
        if (req.url === "/declared")
          return void res.writeHead(200, { "content-length": "2048" }).end(Buffer.alloc(2048, 0x62));
        // No Content-Length: the bound is found while reading.
        if (req.url === "/chunked") return void res.writeHead(200).end(Buffer.alloc(4096, 0x63));
        res.writeHead(200, { "content-type": "text/plain" }).end("the job's log");
      }),
    );
    const origins = await Promise.all(
      servers.map(
        (srv) =>
          new Promise<string>((resolve) =>
            srv.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(srv.address() as { port: number }).port}`)),
          ),
      ),
    );
    try {
      expect(await downloadWithoutAuth(`${origins[0]}/moved`)).toBe("the job's log");
      expect(seen).toEqual([{ url: "/moved" }, { url: "/log.txt?sig=s" }]);
      await expect(downloadWithoutAuth(`${origins[0]}/declared`, { maxBytes: 1024 })).rejects.toThrow(
        /declared is larger than 1024 bytes/,
      );
      await expect(downloadWithoutAuth(`${origins[0]}/chunked`, { maxBytes: 1024 })).rejects.toThrow(
        /chunked is larger than 1024 bytes/,
      );
      expect(await downloadWithoutAuth(`${origins[0]}/chunked`, { maxBytes: 4096 })).toHaveLength(4096);
    } finally {
      for (const srv of servers) srv.closeAllConnections();
      await Promise.all(servers.map((srv) => new Promise((resolve) => srv.close(resolve))));
    }
  });
});

describe("token cache", () => {
  it("keeps a token until shortly before its expiry, honouring short lifetimes", () => {
    let now = Date.parse("2030-01-01T00:00:00Z");
    const cache = createTokenCache(() => now);
    const created = new Date(now).toISOString();
    cache.set("1", `tok-hour|${created}|${new Date(now + 3_600_000).toISOString()}|all|checks!`);
    cache.set("2", `tok-short|${created}|${new Date(now + 120_000).toISOString()}|all|checks!`);
    now += 54 * 60_000;
    expect(cache.get("1")).toMatch(/^tok-hour/);
    expect(cache.get("2")).toBeUndefined(); // 2 min token: renewed at its half-life
    now += 2 * 60_000; // 56 min: within 5 min of expiry
    expect(cache.get("1")).toBeUndefined();
  });

  it("lets go of tokens past renewal that nobody asks for again, however many installations came and went", () => {
    let now = Date.parse("2030-01-01T00:00:00Z");
    const cache = createTokenCache(() => now);
    const token = (i: number) =>
      `tok-${i}|${new Date(now).toISOString()}|${new Date(now + 3_600_000).toISOString()}|all|checks!`;
    // A day of installations each seen once an hour apart: only the last hour's are worth keeping.
    for (let hour = 0; hour < 24; hour++) {
      for (let i = 0; i < 500; i++) cache.set(`${hour * 500 + i}`, token(hour * 500 + i));
      now += 3_600_000;
    }
    expect(cache.size()).toBeLessThanOrEqual(2_000);
    now -= 3_600_000;
    expect(cache.get(`${23 * 500}`)).toMatch(/^tok-11500\|/);
  });
});
