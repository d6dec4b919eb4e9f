import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createOctokitFactory, downloadWithoutAuth } from "../../src/api/client.js";
import { createTokenCache } from "../../src/api/token-cache.js";
import { scrub } from "../../src/log/redact.js";
import { appKey, json, startFakeApi, type FakeApi } from "./fake-api.js";
import { collectingLogger, testConfig } from "./helpers.js";

const APP_ID = 4242;
let api: FakeApi;
let observed: { who: number | "app"; status: number; remaining?: number }[];
let logs: () => string;

function factory(extra: { writeIntervalMs?: number } = {}) {
  const { logger, output } = collectingLogger();
  logs = output;
  return createOctokitFactory({
    config: testConfig({ appId: APP_ID, privateKey: appKey().privateKey, apiUrl: api.url }),
    logger,
    observe: { request: (who, status, remaining) => observed.push({ who, status, remaining }) },
    writeIntervalMs: extra.writeIntervalMs ?? 0,
  });
}

const hits = (path: string) => api.seen.filter((r) => r.path === path);

beforeEach(async () => {
  api = await startFakeApi({ appId: APP_ID });
  observed = [];
});
afterEach(async () => {
  await api.close();
});

describe("API client", () => {
  it("requests one installation token per installation and reuses it for many calls", async () => {
    api.routes.push((req, res) => {
      if (req.path === "/repos/acme/web") json(res, 200, { id: 1, auth: req.headers.authorization }, { "x-ratelimit-remaining": "4999" });
    });
    const octokits = factory();
    const one = await octokits.octokitFor(1);
    expect(await octokits.octokitFor(1)).toBe(one);
    for (let i = 0; i < 5; i++) await one.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
    const two = await octokits.octokitFor(2);
    expect(two).not.toBe(one);
    await Promise.all([1, 2, 3].map(() => two.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })));

    expect(hits("/app/installations/1/access_tokens")).toHaveLength(1);
    expect(hits("/app/installations/2/access_tokens")).toHaveLength(1);
    const [token1] = api.tokensIssued.get(1)!;
    const [token2] = api.tokensIssued.get(2)!;
    const repoCalls = hits("/repos/acme/web");
    expect(repoCalls.slice(0, 5).every((r) => r.headers.authorization === `token ${token1}`)).toBe(true);
    expect(repoCalls.slice(5).every((r) => r.headers.authorization === `token ${token2}`)).toBe(true);
    // Rate-limit state is observed per installation.
    expect(observed.filter((o) => o.who === 1 && o.status === 200 && o.remaining === 4999)).toHaveLength(5);
    expect(observed.filter((o) => o.who === 2 && o.status === 200)).toHaveLength(3);
    // The tokens it saw are now masked wherever they would be logged.
    expect(scrub(`oops ${token1} and ${token2}`)).toBe("oops [REDACTED] and [REDACTED]");
    expect(logs()).not.toContain(token1);
  });

  it("sends steward's User-Agent and the vnd.github+json media type", async () => {
    api.routes.push((req, res) => {
      if (req.path === "/app") json(res, 200, { id: APP_ID });
    });
    const app = await factory().appOctokit();
    await app.request("GET /app");
    const [call] = hits("/app");
    expect(call!.headers["user-agent"]).toMatch(/^steward\/\d+\.\d+\.\d+/);
    expect(call!.headers.accept).toBe("application/vnd.github+json");
    expect(call!.headers.authorization).toMatch(/^bearer ey/);
  });

  it("honours Retry-After on a 403 secondary rate limit and retries", async () => {
    let calls = 0;
    api.routes.push((req, res) => {
      if (req.path !== "/repos/acme/web") return false;
      calls += 1;
      if (calls === 1) {
        return json(res, 403, { message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again." }, { "retry-after": "1" });
      }
      json(res, 200, { id: 1 });
    });
    const octokit = await factory().octokitFor(7);
    const response = await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
    expect(response.status).toBe(200);
    const [first, second] = hits("/repos/acme/web");
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
  });

  it("waits for the primary rate limit to reset, then retries", async () => {
    let resetAt = 0;
    api.routes.push((req, res) => {
      if (req.path !== "/repos/acme/web") return false;
      if (resetAt === 0) {
        resetAt = Math.floor(Date.now() / 1000) + 1;
        return json(res, 403, { message: "API rate limit exceeded for installation ID 8." }, {
          "x-ratelimit-remaining": "0",
          "x-ratelimit-reset": String(resetAt),
        });
      }
      json(res, 200, { id: 1 }, { "x-ratelimit-remaining": "5000" });
    });
    const octokit = await factory().octokitFor(8);
    const response = await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
    expect(response.status).toBe(200);
    const [, retried] = hits("/repos/acme/web");
    expect(retried!.at).toBeGreaterThanOrEqual(resetAt * 1000);
    expect(observed.some((o) => o.who === 8 && o.status === 403 && o.remaining === 0)).toBe(true);
  });

  it("retries 5xx answers", async () => {
    let calls = 0;
    api.routes.push((req, res) => {
      if (req.path !== "/repos/acme/web") return false;
      calls += 1;
      if (calls === 1) return json(res, 502, { message: "Server Error" });
      json(res, 200, { id: 1 });
    });
    const octokit = await factory().octokitFor(9);
    const response = await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
    expect(response.status).toBe(200);
    expect(calls).toBe(2);
  });

  it("does not retry a 404", async () => {
    const octokit = await factory().octokitFor(9);
    await expect(octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "gone" })).rejects.toMatchObject({ status: 404 });
    expect(hits("/repos/acme/gone")).toHaveLength(1);
  });

  it("follows a 301 and remembers it; repeats a 307 verbatim", async () => {
    api.routes.push((req, res) => {
      if (req.path === "/repos/acme/old") {
        res.writeHead(301, { location: `${api.url}/repositories/42` }).end();
      } else if (req.path === "/repositories/42") {
        json(res, 200, { id: 42, name: "new" });
      } else if (req.path === "/repos/acme/old/dispatches") {
        res.writeHead(307, { location: "/repositories/42/dispatches" }).end();
      } else if (req.path === "/repositories/42/dispatches") {
        res.writeHead(204).end();
      } else return false;
    });
    const octokit = await factory().octokitFor(3);
    const first = await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "old" });
    expect(first.data).toEqual({ id: 42, name: "new" });
    await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "old" });
    expect(hits("/repos/acme/old")).toHaveLength(1); // permanent: the second call went straight to the new URI
    expect(hits("/repositories/42")).toHaveLength(2);

    await octokit.request("POST /repos/{owner}/{repo}/dispatches", { owner: "acme", repo: "old", event_type: "go" });
    const [repeated] = hits("/repositories/42/dispatches");
    expect(repeated!.method).toBe("POST");
    expect(JSON.parse(repeated!.body)).toEqual({ event_type: "go" });
    expect(repeated!.headers.authorization).toMatch(/^token /);
  });

  it("repeats a 302 POST verbatim (not as a GET)", async () => {
    api.routes.push((req, res) => {
      if (req.path === "/repos/acme/moved/actions/runs/5/rerun") {
        res.writeHead(302, { location: "/repos/acme/web/actions/runs/5/rerun" }).end();
      } else if (req.path === "/repos/acme/web/actions/runs/5/rerun") {
        json(res, 201, { method: req.method, body: req.body });
      } else return false;
    });
    const octokit = await factory().octokitFor(3);
    const res = await octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun", {
      owner: "acme",
      repo: "moved",
      run_id: 5,
      enable_debug_logging: true,
    });
    expect(res.data).toEqual({ method: "POST", body: JSON.stringify({ enable_debug_logging: true }) });
    // Temporary: the next request goes to the original URI again.
    await octokit.request("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun", { owner: "acme", repo: "moved", run_id: 5 });
    expect(hits("/repos/acme/moved/actions/runs/5/rerun")).toHaveLength(2);
  });

  it("follows Link headers when paginating", async () => {
    api.routes.push((req, res) => {
      const url = new URL(req.path, api.url);
      if (url.pathname !== "/orgs/acme/repos") return false;
      const page = Number(url.searchParams.get("page") ?? "1");
      const link: Record<string, string> = page < 3 ? { link: `<${api.url}/orgs/acme/repos?per_page=2&page=${page + 1}>; rel="next", <${api.url}/orgs/acme/repos?per_page=2&page=3>; rel="last"` } : {};
      json(res, 200, [{ id: page * 10 + 1 }, { id: page * 10 + 2 }].slice(0, page < 3 ? 2 : 1), link);
    });
    const octokit = await factory().octokitFor(5);
    const repos = await octokit.paginate("GET /orgs/{org}/repos", { org: "acme", per_page: 2 });
    expect(repos.map((r) => r.id)).toEqual([11, 12, 21, 22, 31]);
  });

  it("retries a request whose connection was cut (network error)", async () => {
    let calls = 0;
    api.routes.push((req, res) => {
      if (req.path !== "/repos/acme/flaky") return false;
      calls += 1;
      if (calls === 1) {
        res.socket?.destroy();
        return true;
      }
      json(res, 200, { id: 3 });
    });
    const octokit = await factory().octokitFor(6);
    const res = await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "flaky" });
    expect(res.data).toEqual({ id: 3 });
    expect(calls).toBe(2);
    expect(observed.some((o) => o.who === 6 && o.status === 0)).toBe(true);
  });

  it("reads a log redirect manually and downloads it without the Authorization header", async () => {
    const storageSeen: { authorization?: string; path?: string }[] = [];
    const storage = createServer((req, res) => {
      storageSeen.push({ authorization: req.headers.authorization, path: req.url });
      res.writeHead(200, { "content-type": "text/plain" }).end("step 1\nError: flaky network\n");
    });
    await new Promise<void>((resolve) => storage.listen(0, "127.0.0.1", resolve));
    const storageUrl = `http://127.0.0.1:${(storage.address() as AddressInfo).port}`;
    api.routes.push((req, res) => {
      if (req.path === "/repos/acme/web/actions/jobs/5/logs") {
        res.writeHead(302, { location: `${storageUrl}/logs/5.txt?sig=abc` }).end();
      } else return false;
    });
    try {
      const octokit = await factory().octokitFor(4);
      const redirect = await octokit.request("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", {
        owner: "acme",
        repo: "web",
        job_id: 5,
        request: { redirect: "manual" },
      });
      expect(redirect.status).toBe(302);
      const location = redirect.headers.location!;
      expect(await downloadWithoutAuth(location)).toContain("flaky network");
      // The storage host never received a credential, even when the API client itself follows the redirect.
      await octokit.request("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", { owner: "acme", repo: "web", job_id: 5 });
      expect(storageSeen).toHaveLength(2);
      expect(storageSeen.every((s) => s.authorization === undefined)).toBe(true);
      await expect(downloadWithoutAuth(`${storageUrl.replace(/\d+$/, "9")}/x?sig=secret-sig`)).rejects.not.toThrow(/secret-sig/);
    } finally {
      storage.closeAllConnections();
      await new Promise((resolve) => storage.close(resolve));
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
});
