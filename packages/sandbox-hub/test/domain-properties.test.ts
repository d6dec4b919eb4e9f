// Organisation custom property values over HTTP: GET /orgs/{org}/properties/values, set through
// the control surface (TypeScript and HTTP), narrowed by repository_query, paginated, permission-checked.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installationToken, tokenOctokit } from "./core-helpers.js";
import { outcome, startWorld, type World } from "./domain-helpers.js";

describe("hub custom property values", () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld();
  });
  afterAll(() => w.close());

  it("lists every repository of the organisation with its values, set through the control surface", async () => {
    w.hub.domains.properties.setValues("acme", "web", { tier: "critical", teams: ["web", "sre"] });
    const res = await fetch(`${w.hub.url}/_sandbox/domains/properties/setValues`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ args: ["acme", "api", { tier: "standard" }] }),
    });
    expect(res.status).toBeLessThan(300);
    const { data, status } = await w.octokit.request("GET /orgs/{org}/properties/values", { org: "acme" });
    expect(status).toBe(200);
    const byName = Object.fromEntries(data.map((d) => [d.repository_full_name, d.properties]));
    expect(byName["acme/web"]).toEqual([
      { property_name: "teams", value: ["web", "sre"] },
      { property_name: "tier", value: "critical" },
    ]);
    expect(byName["acme/api"]).toEqual([{ property_name: "tier", value: "standard" }]);
    expect(byName["acme/.github"]).toEqual([]);
    expect(data.find((d) => d.repository_name === "web")).toMatchObject({
      repository_id: w.hub.control.repo("acme", "web")!.id,
    });

    w.hub.domains.properties.setValues("acme", "api", { tier: null });
    const narrowed = await w.octokit.request("GET /orgs/{org}/properties/values", {
      org: "acme",
      repository_query: "repo:acme/api",
    });
    expect(narrowed.data).toEqual([
      {
        repository_id: w.hub.control.repo("acme", "api")!.id,
        repository_name: "api",
        repository_full_name: "acme/api",
        properties: [],
      },
    ]);
  });

  it("paginates with Link, and answers 404 for an organisation the installation is not on", async () => {
    const first = await w.octokit.request("GET /orgs/{org}/properties/values", { org: "acme", per_page: 1 });
    expect(first.data).toHaveLength(1);
    expect(first.headers.link).toContain('rel="next"');
    expect((await outcome(w.octokit.request("GET /orgs/{org}/properties/values", { org: "globex" }))).status).toBe(404);
  });

  it("needs the organisation's custom properties read permission", async () => {
    const narrow = await installationToken(w.hub, w.installationId, { permissions: { metadata: "read" } });
    const denied = await outcome(
      tokenOctokit(w.hub, narrow).request("GET /orgs/{org}/properties/values", { org: "acme" }),
    );
    expect(denied.status).toBe(403);
  });
});
