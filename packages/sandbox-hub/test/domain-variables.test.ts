import { describe, expect, it } from "vitest";
import { outcome, worldPerFile } from "./domain-helpers.js";

describe("hub Actions variables over HTTP", () => {
  const world = worldPerFile((w) =>
    w.hub.domains.deployments.putEnvironment(w.hub.control.repo("acme", "web")!, "staging"),
  );
  const repo = { owner: "acme", repo: "web" };

  it("creates (201), refuses a duplicate (409), gets, updates (204) and deletes (204) a repository variable", async () => {
    expect(
      (
        await world().octokit.request("POST /repos/{owner}/{repo}/actions/variables", {
          ...repo,
          name: "region",
          value: "eu-west-1",
        })
      ).status,
    ).toBe(201);
    const dup = await outcome(
      world().octokit.request("POST /repos/{owner}/{repo}/actions/variables", {
        ...repo,
        name: "REGION",
        value: "x",
        request: { retries: 0 },
      }),
    );
    expect(dup.status).toBe(409);
    const got = await world().octokit.request("GET /repos/{owner}/{repo}/actions/variables/{name}", {
      ...repo,
      name: "REGION",
    });
    expect(got.data).toMatchObject({ name: "REGION", value: "eu-west-1" });
    expect(got.data.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(
      (
        await world().octokit.request("PATCH /repos/{owner}/{repo}/actions/variables/{name}", {
          ...repo,
          name: "REGION",
          value: "us-east-1",
        })
      ).status,
    ).toBe(204);
    expect(world().hub.domains.variables.valueIn({ owner: "acme", repo: "web" }, "REGION")).toBe("us-east-1");
    expect(
      (
        await world().octokit.request("DELETE /repos/{owner}/{repo}/actions/variables/{name}", {
          ...repo,
          name: "REGION",
        })
      ).status,
    ).toBe(204);
    expect(
      (
        await outcome(
          world().octokit.request("GET /repos/{owner}/{repo}/actions/variables/{name}", { ...repo, name: "REGION" }),
        )
      ).status,
    ).toBe(404);
    const missing = await outcome(
      world().octokit.request("POST /repos/{owner}/{repo}/actions/variables", { ...repo, name: "NOVALUE" } as never),
    );
    expect(missing.status).toBe(422);
  });

  it("lists at most 30 variables a page, whatever per_page asks", async () => {
    for (let i = 0; i < 35; i++)
      await world().octokit.request("POST /repos/{owner}/{repo}/actions/variables", {
        ...repo,
        name: `V${String(i).padStart(2, "0")}`,
        value: String(i),
      });
    const page1 = await world().octokit.request("GET /repos/{owner}/{repo}/actions/variables", {
      ...repo,
      per_page: 100,
    });
    expect(page1.data.total_count).toBe(35);
    expect(page1.data.variables).toHaveLength(30);
    expect(page1.headers.link).toContain('rel="next"');
    const page2 = await world().octokit.request("GET /repos/{owner}/{repo}/actions/variables", {
      ...repo,
      per_page: 100,
      page: 2,
    });
    expect(page2.data.variables.map((v) => v.name)).toEqual(["V30", "V31", "V32", "V33", "V34"]);
  });

  it("organisation variables: visibility rules, selection and what a repository sees", async () => {
    const org = { org: "acme" };
    const web = world().hub.control.repo("acme", "web")!;
    const api = world().hub.control.repo("acme", "api")!;
    const bad = await outcome(
      world().octokit.request("POST /orgs/{org}/actions/variables", {
        ...org,
        name: "TEAM",
        value: "core",
        visibility: "all",
        selected_repository_ids: [web.id],
      }),
    );
    expect(bad.status).toBe(422);
    await world().octokit.request("POST /orgs/{org}/actions/variables", {
      ...org,
      name: "TEAM",
      value: "core",
      visibility: "selected",
      selected_repository_ids: [api.id],
    });
    await world().octokit.request("POST /orgs/{org}/actions/variables", {
      ...org,
      name: "EVERYONE",
      value: "yes",
      visibility: "all",
    });
    const forWeb = await world().octokit.request("GET /repos/{owner}/{repo}/actions/organization-variables", repo);
    expect(forWeb.data.variables.map((v) => v.name)).toEqual(["EVERYONE"]);
    await world().octokit.request("PUT /orgs/{org}/actions/variables/{name}/repositories/{repository_id}", {
      ...org,
      name: "TEAM",
      repository_id: web.id,
    });
    expect(
      (
        await world().octokit.request("GET /repos/{owner}/{repo}/actions/organization-variables", repo)
      ).data.variables.map((v) => v.name),
    ).toEqual(["EVERYONE", "TEAM"]);
    const sel = await world().octokit.request("GET /orgs/{org}/actions/variables/{name}/repositories", {
      ...org,
      name: "TEAM",
    });
    expect(sel.data.repositories.map((r) => r.id).sort()).toEqual([web.id, api.id].sort());
    const notSelected = await outcome(
      world().octokit.request("GET /orgs/{org}/actions/variables/{name}/repositories", {
        ...org,
        name: "EVERYONE",
        request: { retries: 0 },
      }),
    );
    expect(notSelected.status).toBe(409);
    const patchBad = await outcome(
      world().octokit.request("PATCH /orgs/{org}/actions/variables/{name}", {
        ...org,
        name: "EVERYONE",
        selected_repository_ids: [web.id],
      }),
    );
    expect(patchBad.status).toBe(422);
    await world().octokit.request("PATCH /orgs/{org}/actions/variables/{name}", {
      ...org,
      name: "TEAM",
      visibility: "all",
    });
    const team = await world().octokit.request("GET /orgs/{org}/actions/variables/{name}", { ...org, name: "TEAM" });
    expect(team.data).toMatchObject({ name: "TEAM", value: "core", visibility: "all" });
    const unknownRepo = await outcome(
      world().octokit.request("PUT /orgs/{org}/actions/variables/{name}/repositories", {
        ...org,
        name: "TEAM",
        selected_repository_ids: [1],
      }),
    );
    expect([409, 422]).toContain(unknownRepo.status);
  });

  it("environment variables live with their environment", async () => {
    const env = { ...repo, environment_name: "staging" };
    await world().octokit.request("POST /repos/{owner}/{repo}/environments/{environment_name}/variables", {
      ...env,
      name: "URL",
      value: "https://staging.example",
    });
    const list = await world().octokit.request(
      "GET /repos/{owner}/{repo}/environments/{environment_name}/variables",
      env,
    );
    expect(list.data).toMatchObject({ total_count: 1, variables: [{ name: "URL", value: "https://staging.example" }] });
    expect(
      (await world().octokit.request("GET /repos/{owner}/{repo}/actions/variables/{name}", { ...repo, name: "V00" }))
        .data.value,
    ).toBe("0");
    expect(
      (
        await outcome(
          world().octokit.request("GET /repos/{owner}/{repo}/actions/variables/{name}", { ...repo, name: "URL" }),
        )
      ).status,
    ).toBe(404);
    const out = world().hub.domains.variables.setVariableOutOfBand(
      { owner: "acme", repo: "web", environment: "staging" },
      "URL",
      "https://changed.example",
    );
    expect(out.value).toBe("https://changed.example");
    expect(
      (
        await world().octokit.request("GET /repos/{owner}/{repo}/environments/{environment_name}/variables/{name}", {
          ...env,
          name: "URL",
        })
      ).data.value,
    ).toBe("https://changed.example");
  });
});
