// `adopt`: a secret or variable that exists but Steward did not create. adopt: true takes it over and
// records it as Steward's (so prune may delete it later); adopt: false, or no adopt at all, leaves it
// exactly as it is and reports a conflict saying how to adopt it.
import { afterEach, describe, expect, it } from "vitest";
import { createWorld, ORG, type World } from "./world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const ENV = { STEWARD_SECRET_ADOPT_VALUE: "steward's value" };
const CONFLICT = (key: string, why: string) =>
  `exists and Steward did not create it, so it is left as it is (${why}); to let Steward overwrite it and manage it from now on, set \`adopt: true\` on ${key} (or on the whole document)`;

describe("adopting existing secrets and variables", () => {
  it("adopt: true overwrites a person's secret and variable once, records them as Steward's, and prune can then delete them", async () => {
    world = await createWorld({ repos: ["web"], env: ENV });
    const { secrets, variables } = world.h.domains;
    secrets.setSecretOutOfBand({ owner: ORG, repo: "web" }, "API_KEY", "person's");
    variables.setVariableOutOfBand({ owner: ORG, repo: "web" }, "REGION", "us-east-1");
    world.pushPolicy(
      "adopt: true\nsecrets:\n  API_KEY: { from: env:STEWARD_SECRET_ADOPT_VALUE, repositories: [web] }\nvariables:\n  REGION: { value: us-east-1, repositories: [web] }\n",
    );

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
    expect(pruned.applied.map((r) => [r.name, r.action])).toEqual([
      ["API_KEY", "delete"],
      ["REGION", "delete"],
    ]);
    expect(secrets.openedValue({ owner: ORG, repo: "web" }, "API_KEY")).toBeUndefined();
  });

  it("adopt: false on an entry leaves a person's secret as it is and reports why", async () => {
    world = await createWorld({ repos: ["web"], env: ENV });
    const { secrets } = world.h.domains;
    secrets.setSecretOutOfBand({ owner: ORG, repo: "web" }, "API_KEY", "person's");
    world.pushPolicy(
      "adopt: true\nsecrets:\n  API_KEY: { from: env:STEWARD_SECRET_ADOPT_VALUE, repositories: [web], adopt: false }\n  NEW_KEY: { from: env:STEWARD_SECRET_ADOPT_VALUE, repositories: [web] }\n",
    );
    const mark = world.mark();
    const result = await world.sync();
    expect(result.applied.map((r) => r.name)).toEqual(["NEW_KEY"]);
    expect(result.failures).toEqual([]);
    expect(result.leftAlone).toEqual([
      {
        scope: { level: "repo", repo: "web" },
        kind: "secret",
        name: "API_KEY",
        reason: CONFLICT("secrets.API_KEY", "exists but Steward never wrote it (value unknown)"),
      },
    ]);
    expect(secrets.openedValue({ owner: ORG, repo: "web" }, "API_KEY")).toBe("person's");
    expect(
      mark()
        .filter((r) => r.method === "PUT")
        .map((r) => r.path),
    ).toEqual([`/repos/${ORG}/web/actions/secrets/NEW_KEY`]);
  });

  it("without adopt, a person's secret and variable are not overwritten: the plan and the sync report them left alone", async () => {
    world = await createWorld({ repos: ["web"], env: ENV });
    const { secrets, variables } = world.h.domains;
    secrets.setSecretOutOfBand({ owner: ORG, repo: "web" }, "API_KEY", "person's");
    variables.setVariableOutOfBand({ owner: ORG, repo: "web" }, "REGION", "us-east-1");
    world.pushPolicy(
      "secrets:\n  API_KEY: { from: env:STEWARD_SECRET_ADOPT_VALUE, repositories: [web] }\nvariables:\n  REGION: { value: eu-west-1, repositories: [web] }\n",
    );
    const expected = [
      {
        scope: { level: "repo", repo: "web" },
        kind: "secret",
        name: "API_KEY",
        reason: CONFLICT("secrets.API_KEY", "exists but Steward never wrote it (value unknown)"),
      },
      {
        scope: { level: "repo", repo: "web" },
        kind: "variable",
        name: "REGION",
        reason: CONFLICT("variables.REGION", "value differs from policy"),
      },
    ];

    const plan = await world.sync({ dryRun: true });
    expect(plan.rows.map((r) => [r.name, r.action, r.conflict])).toEqual([
      ["API_KEY", "unchanged", true],
      ["REGION", "unchanged", true],
    ]);
    // Left alone on purpose, as documented: reported apart, not a failure.
    expect(plan.failures).toEqual([]);
    expect(plan.leftAlone).toEqual(expected);

    const mark = world.mark();
    const result = await world.sync();
    expect(result.applied).toEqual([]);
    expect(result.failures).toEqual([]);
    expect(result.leftAlone).toEqual(expected);
    // The variable's create (Steward had written nothing there, so it did not list first) was refused: nothing written.
    expect(mark().filter((r) => r.method === "PUT" || r.method === "PATCH" || r.method === "POST")).toEqual([
      { method: "POST", path: `/repos/${ORG}/web/actions/variables`, query: "", status: 409 },
    ]);
    expect(secrets.openedValue({ owner: ORG, repo: "web" }, "API_KEY")).toBe("person's");
    expect(variables.valueIn({ owner: ORG, repo: "web" }, "REGION")).toBe("us-east-1");

    // The reason names the key that adopts it; saying so takes it over on the next sync.
    world.pushPolicy(
      "secrets:\n  API_KEY: { from: env:STEWARD_SECRET_ADOPT_VALUE, repositories: [web], adopt: true }\nvariables:\n  REGION: { value: eu-west-1, repositories: [web], adopt: true }\n",
    );
    const adopted = await world.sync();
    expect(adopted.failures).toEqual([]);
    expect(adopted.leftAlone).toEqual([]);
    expect(adopted.applied.map((r) => [r.name, r.action, r.created])).toEqual([
      ["API_KEY", "update", true],
      ["REGION", "update", true],
    ]);
    expect(secrets.openedValue({ owner: ORG, repo: "web" }, "API_KEY")).toBe("steward's value");
  });
});
