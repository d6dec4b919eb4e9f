// `adopt`: a secret or variable that exists but Steward did not create. adopt: true takes it over and
// records it as Steward's (so prune may delete it later); adopt: false leaves it and reports it.
import { afterEach, describe, expect, it } from "vitest";
import { createWorld, ORG, type World } from "./world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const ENV = { STEWARD_SECRET_ADOPT_VALUE: "steward's value" };

describe("adopting existing secrets and variables", () => {
  it("adopt: true overwrites a person's secret and variable once, records them as Steward's, and prune can then delete them", async () => {
    world = await createWorld({ repos: ["web"], env: ENV });
    const { secrets, variables } = world.h.domains;
    secrets.setSecretOutOfBand({ owner: ORG, repo: "web" }, "API_KEY", "person's");
    variables.setVariableOutOfBand({ owner: ORG, repo: "web" }, "REGION", "us-east-1");
    world.pushPolicy("adopt: true\nsecrets:\n  API_KEY: { from: env:STEWARD_SECRET_ADOPT_VALUE, repositories: [web] }\nvariables:\n  REGION: { value: us-east-1, repositories: [web] }\n");

    const first = await world.sync();
    expect(first.failures).toEqual([]);
    expect(first.applied.map((r) => [r.name, r.action, r.created, r.reason])).toEqual([
      ["API_KEY", "update", true, "adopted (adopt: true): it exists and Steward did not create it"],
      ["REGION", "update", true, "adopted (adopt: true): it exists and Steward did not create it"],
    ]);
    expect(secrets.openedValue({ owner: ORG, repo: "web" }, "API_KEY")).toBe("steward's value");
    expect((await world.sync()).applied).toEqual([]);

    world.pushPolicy("secrets: {}\nprune: true\n");
    const pruned = await world.sync();
    expect(pruned.applied.map((r) => [r.name, r.action])).toEqual([["API_KEY", "delete"], ["REGION", "delete"]]);
    expect(secrets.openedValue({ owner: ORG, repo: "web" }, "API_KEY")).toBeUndefined();
  });

  it("adopt: false on an entry leaves a person's secret as it is and reports why", async () => {
    world = await createWorld({ repos: ["web"], env: ENV });
    const { secrets } = world.h.domains;
    secrets.setSecretOutOfBand({ owner: ORG, repo: "web" }, "API_KEY", "person's");
    world.pushPolicy("adopt: true\nsecrets:\n  API_KEY: { from: env:STEWARD_SECRET_ADOPT_VALUE, repositories: [web], adopt: false }\n  NEW_KEY: { from: env:STEWARD_SECRET_ADOPT_VALUE, repositories: [web] }\n");
    const mark = world.mark();
    const result = await world.sync();
    expect(result.applied.map((r) => r.name)).toEqual(["NEW_KEY"]);
    expect(result.failures).toEqual([
      { scope: { level: "repo", repo: "web" }, kind: "secret", name: "API_KEY", action: "adopt", error: "exists and Steward did not create it: left as it is (exists but Steward never wrote it (value unknown)); adopt: true adopts it" },
    ]);
    expect(secrets.openedValue({ owner: ORG, repo: "web" }, "API_KEY")).toBe("person's");
    expect(mark().filter((r) => r.method === "PUT").map((r) => r.path)).toEqual([`/repos/${ORG}/web/actions/secrets/NEW_KEY`]);
  });
});
