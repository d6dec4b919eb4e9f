import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HubHandle } from "../src/hub.js";
import { installationToken, probotFor, startHub, tokenOctokit } from "./core-helpers.js";

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

async function failure(p: Promise<unknown>) {
  try {
    await p;
  } catch (err) {
    return err as { status: number; response: { data: Record<string, unknown>; headers: Record<string, string> } };
  }
  throw new Error("expected the request to fail");
}

describe("hub conventions", () => {
  let hub: HubHandle;
  let token: string;
  let instId: number;
  beforeAll(async () => {
    hub = await startHub();
    instId = hub.control.installation("acme")!.id;
    for (let i = 1; i <= 7; i++) hub.control.createRepo({ owner: "acme", name: `extra-${i}` });
    token = await installationToken(hub, instId);
  });
  afterAll(() => hub.close());

  it("returns every field, with null for no value, timestamps without milliseconds and the listed headers", async () => {
    const { data, headers } = await tokenOctokit(hub, token).request("GET /repos/{owner}/{repo}", {
      owner: "acme",
      repo: "web",
    });
    expect(data.description).toBeNull();
    expect(data.mirror_url).toBeNull();
    expect(data.license).toBeNull();
    expect(data.created_at).toMatch(TIMESTAMP);
    expect(data.pushed_at).toMatch(TIMESTAMP);
    expect(data.owner.login).toBe("acme");
    expect(data.full_name).toBe("acme/web");
    expect(headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(headers["x-github-media-type"]).toBe("github.v3; format=json");
    expect(headers.etag).toMatch(/^W\/"[0-9a-f]{64}"$/);
    expect(headers["cache-control"]).toContain("private");
    expect(headers["x-content-type-options"]).toBe("nosniff");
    expect(headers["x-ratelimit-limit"]).toBe("5000");
    expect(Number(headers["x-ratelimit-reset"])).toBeGreaterThan(Date.now() / 1000);
    expect(headers["content-length"]).toBe(String(Buffer.byteLength(JSON.stringify(data))));
  });

  it("paginates with per_page (default 30, max 100) and Link rel next/last/first/prev", async () => {
    const octokit = tokenOctokit(hub, token);
    const first = await octokit.request("GET /installation/repositories", { per_page: 3 });
    expect(first.data.total_count).toBe(11);
    expect(first.data.repositories).toHaveLength(3);
    expect(first.headers.link).toContain('page=2>; rel="next"');
    expect(first.headers.link).toContain('page=4>; rel="last"');
    expect(first.headers.link).not.toContain('rel="prev"');
    const middle = await octokit.request("GET /installation/repositories", { per_page: 3, page: 2 });
    for (const rel of ["next", "last", "first", "prev"]) expect(middle.headers.link).toContain(`rel="${rel}"`);
    const last = await octokit.request("GET /installation/repositories", { per_page: 3, page: 4 });
    expect(last.data.repositories).toHaveLength(2);
    expect(last.headers.link).not.toContain('rel="next"');
    const all = await octokit.paginate("GET /orgs/{org}/repos", { org: "acme", per_page: 4 });
    expect(all).toHaveLength(11);
    expect(new Set(all.map((r) => r.id)).size).toBe(11);
    const capped = await octokit.request("GET /orgs/{org}/repos", { org: "acme", per_page: 500 });
    expect(capped.data).toHaveLength(11);
    expect(capped.headers.link).toBeUndefined();
  });

  it("answers errors with the seeds' bodies", async () => {
    const octokit = tokenOctokit(hub, token);
    const missing = await failure(octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "nope" }));
    expect(missing.status).toBe(404);
    expect(missing.response.data).toEqual({
      message: "Not Found",
      documentation_url: "https://docs.github.com/rest",
      status: "404",
    });
    // A route the sandbox does not serve: the same body, with the method and path named.
    const unknown = await failure(
      octokit.request("DELETE /repos/{owner}/{repo}/no-such-thing/{id}", { owner: "acme", repo: "web", id: 7 }),
    );
    expect(unknown.status).toBe(404);
    expect(unknown.response.data).toEqual({
      message: "Not Found: the sandbox hub has no route for DELETE /repos/acme/web/no-such-thing/7",
      documentation_url: "https://docs.github.com/rest",
      status: "404",
    });
    const app = await probotFor(hub).auth();
    const invalid = await failure(app.request("PATCH /app/hook/config", { content_type: "xml" }));
    expect(invalid.status).toBe(422);
    expect(invalid.response.data.message).toBe("Validation Failed");
    expect(invalid.response.data.errors).toEqual([{ resource: "Hook", field: "content_type", code: "invalid" }]);
    const { token: jwt } = (await app.auth({ type: "app" })) as { token: string };
    const send = (body: string) =>
      fetch(`${hub.url}/app/hook/config`, {
        method: "PATCH",
        body,
        headers: { Authorization: `Bearer ${jwt}`, "Content-Type": "application/json" },
      });
    const badJson = await send("{not json");
    expect(badJson.status).toBe(400);
    expect(((await badJson.json()) as { message: string }).message).toBe("Problems parsing JSON");
    const notObject = await send("[1,2]");
    expect(notObject.status).toBe(400);
    expect(((await notObject.json()) as { message: string }).message).toBe("Body should be a JSON object");
    const noAuth = await fetch(`${hub.url}/installation/repositories`);
    expect(noAuth.status).toBe(401);
  });

  it("answers 304 to If-None-Match with the stored ETag, without counting it against the rate limit", async () => {
    const octokit = tokenOctokit(hub, token);
    const first = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: "acme",
      repo: "web",
      path: "package.json",
    });
    const remaining = Number(first.headers["x-ratelimit-remaining"]);
    const again = await failure(
      octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
        owner: "acme",
        repo: "web",
        path: "package.json",
        headers: { "if-none-match": first.headers.etag! },
      }),
    );
    expect(again.status).toBe(304);
    expect(Number(again.response.headers["x-ratelimit-remaining"])).toBe(remaining);
    const third = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: "acme",
      repo: "web",
      path: "package.json",
    });
    expect(Number(third.headers["x-ratelimit-remaining"])).toBe(remaining - 1);
    // A change of the content changes the ETag: the conditional request gets the new body.
    hub.control.pushFiles({ owner: "acme", repo: "web", files: { "package.json": "{}\n" } });
    const changed = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: "acme",
      repo: "web",
      path: "package.json",
      headers: { "if-none-match": first.headers.etag! },
    });
    expect(changed.status).toBe(200);
  });

  it("refuses requests with 403, remaining 0 and the reset time once the installation's budget is spent", async () => {
    const octokit = tokenOctokit(hub, token);
    const resetAt = new Date(Date.now() + 20 * 60 * 1000);
    hub.control.setRateLimit(instId, { limit: 100, remaining: 2, resetAt });
    expect(
      (await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })).headers[
        "x-ratelimit-remaining"
      ],
    ).toBe("1");
    await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
    const refused = await failure(octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" }));
    expect(refused.status).toBe(403);
    expect(refused.response.data.message).toBe(`API rate limit exceeded for installation ID ${instId}.`);
    expect(refused.response.headers["x-ratelimit-remaining"]).toBe("0");
    expect(refused.response.headers["x-ratelimit-reset"]).toBe(String(Math.floor(resetAt.getTime() / 1000)));
    // Other installations keep their own budget; the window resets on the sandbox clock.
    hub.control.advanceClock(21 * 60 * 1000);
    expect(
      (await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })).headers[
        "x-ratelimit-remaining"
      ],
    ).toBe("99");
    hub.control.advanceClock(-21 * 60 * 1000);
  });

  it("answers the secondary limit with 403 or 429 and Retry-After", async () => {
    const octokit = tokenOctokit(hub, token);
    hub.control.setSecondaryLimit({ status: 429, retryAfterSec: 7, nextN: 1 });
    const first = await failure(octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" }));
    expect(first.status).toBe(429);
    expect(first.response.headers["retry-after"]).toBe("7");
    expect(first.response.data.message).toMatch(/secondary rate limit/);
    expect((await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })).status).toBe(200);
    hub.control.setSecondaryLimit({ status: 403, retryAfterSec: 3, everyN: 2 });
    const results: number[] = [];
    for (let i = 0; i < 4; i++) {
      results.push(
        await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" }).then(
          (r) => r.status,
          (e: { status: number }) => e.status,
        ),
      );
    }
    expect(results).toEqual([200, 403, 200, 403]);
    hub.control.setSecondaryLimit(null);
  });

  it("redirects a renamed repository with 301 and Location, which Octokit follows", async () => {
    hub.control.createRepo({ owner: "acme", name: "old-name", files: { "a.txt": "A\n" } });
    hub.control.renameRepo("acme", "old-name", "new-name");
    const res = await fetch(`${hub.url}/repos/acme/old-name/contents/a.txt?ref=main`, {
      headers: { Authorization: `token ${token}` },
      redirect: "manual",
    });
    expect(res.status).toBe(301);
    const id = hub.control.repo("acme", "new-name")!.id;
    expect(res.headers.get("location")).toBe(`${hub.url}/repositories/${id}/contents/a.txt?ref=main`);
    const followed = await tokenOctokit(hub, token).request("GET /repos/{owner}/{repo}", {
      owner: "acme",
      repo: "old-name",
    });
    expect(followed.data.name).toBe("new-name");
  });
});
