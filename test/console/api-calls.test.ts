// Issue 16: a delivery's page shows the API calls each handler run made, with status and
// duration: driven through the sandbox stack (real webhooks, real Octokit against the hub),
// read over HTTP after signing in through the hub's OAuth.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineHandler } from "../../src/handler.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import { storedApiCalls, MAX_CALLS } from "../../src/engine/api-calls.js";
import { signIn } from "./session.js";
import { leakGuard } from "../support/leak-guard.js";

const ORG = "acme";
let stack: SandboxStack;

// A handler that reads the repository, asks for a file that is not there (404), lists commits
// with a query string in a literal path, and, when told "many", makes more calls than are kept.
const prober = defineHandler<unknown>({
  name: "prober",
  events: ["push"],
  async handle(ctx) {
    const payload = ctx.payload as {
      repository: { name: string; owner: { login: string } };
      head_commit?: { message?: string };
    };
    const where = { owner: payload.repository.owner.login, repo: payload.repository.name };
    await ctx.octokit.request("GET /repos/{owner}/{repo}", where);
    const missing = await ctx.octokit
      .request("GET /repos/{owner}/{repo}/contents/{path}", { ...where, path: "missing.txt" })
      .catch((e: { status?: number }) => e.status);
    await ctx.octokit.request(`GET /repos/${where.owner}/${where.repo}/commits?per_page=1`);
    if (payload.head_commit?.message?.includes("many")) {
      for (let i = 0; i < MAX_CALLS + 5; i++) await ctx.octokit.request("GET /repos/{owner}/{repo}", where);
    }
    return { status: "done", summary: `missing.txt answered ${String(missing)}` };
  },
});

async function deliveryIdOf(repo: string, message: string): Promise<string> {
  const page = await stack.steward.store.browse.browseDeliveries({
    limit: 50,
    repository: `${ORG}/${repo}`,
    event: "push",
  });
  for (const item of page.items) {
    const record = await stack.steward.store.deliveries.getDelivery(item.id);
    if (
      (JSON.parse(record!.delivery.payload) as { head_commit?: { message?: string } }).head_commit?.message === message
    )
      return item.id;
  }
  throw new Error(`no push delivery "${message}" to ${repo}`);
}

async function push(repo: string, message: string): Promise<string> {
  stack.hub.control.pushFiles({ owner: ORG, repo, files: { "notes.txt": `${message}\n` }, message });
  await stack.hub.control.settled();
  await stack.steward.engine.idle();
  return deliveryIdOf(repo, message);
}

/** Rows of the API calls table as [method, route, status, duration]. */
function callRows(text: string): string[][] {
  const section = /<section aria-labelledby="api-calls">([\s\S]*?)<\/section>/.exec(text)?.[1] ?? "";
  return [
    ...section.matchAll(
      /<tr><td>([A-Z]+)<\/td><td><code>([^<]*)<\/code><\/td><td>([^<]*)<\/td><td>([^<]*)<\/td><\/tr>/g,
    ),
  ].map((m) => m.slice(1));
}

beforeAll(async () => {
  stack = await startSandboxStack({ handlers: [prober] });
});
afterAll(async () => {
  await stack?.close();
});

describe("the API calls of a delivery's handler runs", () => {
  it("lists each call with method, route template, status and duration; no query string, no token", async () => {
    const id = await push("web", "docs");
    const owner = await signIn(stack.steward.url, "octo-admin");
    const page = await owner.visit(`/console/deliveries/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain("prober, attempt 1");
    const rows = callRows(page.text);
    const routes = rows.map(([method, route, status]) => `${method} ${route} ${status}`);
    expect(routes).toEqual(
      expect.arrayContaining([
        "GET /repos/{owner}/{repo} 200",
        "GET /repos/{owner}/{repo}/contents/{path} 404",
        `GET /repos/${ORG}/web/commits 200`,
      ]),
    );
    for (const [, , , ms] of rows) expect(ms).toMatch(/^\d+$/);
    expect(page.text).not.toContain("per_page");
    expect(page.text).not.toMatch(/gh[sup]_[A-Za-z0-9]/);
    expect(leakGuard.scan("delivery page with API calls", page.text)).toEqual([]);

    // A member who can see the repository sees the same calls.
    const dana = await signIn(stack.steward.url, "dev-dana");
    const hers = await dana.visit(`/console/deliveries/${id}`);
    expect(hers.status).toBe(200);
    expect(callRows(hers.text)).toEqual(rows);
  });

  it("a member who cannot see the repository does not get the page", async () => {
    const id = await push("service-billing", "rates");
    const dana = await signIn(stack.steward.url, "dev-dana");
    expect((await dana.visit(`/console/deliveries/${id}`)).status).toBe(404);
    const owner = await signIn(stack.steward.url, "octo-admin");
    expect(callRows((await owner.visit(`/console/deliveries/${id}`)).text).length).toBeGreaterThan(0);
  });

  it("keeps at most the last MAX_CALLS calls of a delivery and says how many were left out", async () => {
    const id = await push("web", "many calls");
    const stored = await storedApiCalls(stack.steward.store.kv, id);
    expect(stored.reduce((n, r) => n + r.calls.length, 0)).toBe(MAX_CALLS);
    const owner = await signIn(stack.steward.url, "octo-admin");
    const page = await owner.visit(`/console/deliveries/${id}`);
    expect(callRows(page.text)).toHaveLength(MAX_CALLS);
    expect(page.text).toContain("(8 earlier calls not kept)");
  });

  it("a replay's run is listed after the first one", async () => {
    const id = await push("web", "replayed");
    await stack.steward.engine.replay(id);
    await stack.steward.engine.idle();
    const stored = await storedApiCalls(stack.steward.store.kv, id);
    expect(stored.filter((r) => r.handler === "prober")).toHaveLength(2);
  });
});
