// Steward's Octokit class against the sandbox hub: Probot's app auth (a real app JWT, then an
// installation token), the REST methods and pagination handlers call, and, for a client built
// without rate-limit answers of its own (a reviewer's token), waiting as GitHub asks.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StewardOctokit } from "../../src/api/octokit.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";

let hub: HubHandle;
beforeEach(async () => {
  hub = await createHub();
});
afterEach(async () => {
  await hub.close();
});

function collectingLog() {
  const warnings: string[] = [];
  return { warnings, log: { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} } };
}

describe("StewardOctokit", () => {
  it("authenticates as an installation with the app's key and calls REST methods, paginated", async () => {
    const installationId = hub.control.installation("acme")!.id;
    const octokit = new StewardOctokit({
      auth: { appId: Number(hub.env.APP_ID), privateKey: hub.env.PRIVATE_KEY, installationId },
      baseUrl: hub.url,
      log: collectingLog().log,
    });
    const { data: repo } = await octokit.rest.repos.get({ owner: "acme", repo: "web" });
    expect(repo.full_name).toBe("acme/web");
    const repos = await octokit.paginate(octokit.rest.apps.listReposAccessibleToInstallation, { per_page: 1 });
    expect(repos.map((r) => r.full_name)).toContain("acme/web");
    const requests = hub.control.requests();
    // The token was minted once, with the app's JWT; every call after it carried that token.
    expect(
      requests
        .filter((r) => r.path === `/app/installations/${installationId}/access_tokens`)
        .map((r) => [r.method, r.auth, r.status]),
    ).toEqual([["POST", "app", 201]]);
    expect(requests.filter((r) => r.path === "/installation/repositories").length).toBeGreaterThan(1);
    expect(
      requests
        .filter((r) => r.path.startsWith("/repos/") || r.path === "/installation/repositories")
        .every((r) => r.auth === "installation"),
    ).toBe(true);
    // Probot's config-file reader is there for handlers written against Probot's client.
    expect(typeof octokit.config.get).toBe("function");
  });

  it("without rate-limit answers of its own, waits out a secondary limit's Retry-After and tries again", async () => {
    const { warnings, log } = collectingLog();
    const octokit = new StewardOctokit({ auth: { token: hub.control.userToken("octo-admin") }, baseUrl: hub.url, log });
    hub.control.setSecondaryLimit({ status: 403, retryAfterSec: 1, nextN: 1 });
    const { status } = await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
    expect(status).toBe(200);
    const [first, second] = hub.control.requests().filter((r) => r.path === "/repos/acme/web");
    expect(first!.status).toBe(403);
    expect(second!.status).toBe(200);
    expect(second!.receivedAt - first!.at).toBeGreaterThanOrEqual(950);
    expect(warnings).toEqual(["rate limit reached by GET /repos/{owner}/{repo}; retrying in 1 s"]);
  });
});
