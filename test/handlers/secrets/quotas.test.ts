// Plans warn before GitHub's limits on secrets and variables (counts per scope, 48 KB per value),
// with the counts; the sandbox hub refuses writes past the limits as GitHub does.
import { afterEach, describe, expect, it } from "vitest";
import { planSummary } from "../../../handlers/secrets/report.js";
import { createWorld, ORG, type World } from "./world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const manySecrets = (n: number, repo: string) =>
  "secrets:\n" +
  Array.from(
    { length: n },
    (_, i) => `  NEW_${i}: { from: env:STEWARD_SECRET_QUOTA_VALUE, repositories: [${repo}] }\n`,
  ).join("");

describe("GitHub's limits in plans", () => {
  it("warns that a repository would pass 100 secrets, and the writes past it fail at the hub", async () => {
    world = await createWorld({ repos: ["web"], env: { STEWARD_SECRET_QUOTA_VALUE: "v" } });
    for (let i = 0; i < 95; i++)
      world.h.domains.secrets.setSecretOutOfBand({ owner: ORG, repo: "web" }, `HUMAN_${i}`, "x");
    world.pushPolicy(manySecrets(8, "web"));

    const plan = await world.sync({ dryRun: true });
    expect(plan.warnings).toEqual([
      "repo web would have 103 secrets, over GitHub's limit of 100 repository secrets: the writes past it will fail",
    ]);
    expect(planSummary(plan).summary).toContain(
      "### GitHub's limits\n\n- :warning: repo web would have 103 secrets, over GitHub's limit of 100 repository secrets",
    );

    const applied = await world.sync();
    expect(applied.applied).toHaveLength(5);
    expect(applied.failures.map((f) => f.error)).toEqual(Array(3).fill("422 Validation Failed"));
  });

  it("warns near the limit, and about a variable value over 48 KB", async () => {
    world = await createWorld({ repos: ["api"], env: { STEWARD_SECRET_QUOTA_VALUE: "v" } });
    for (let i = 0; i < 90; i++)
      world.h.domains.secrets.setSecretOutOfBand({ owner: ORG, repo: "api" }, `HUMAN_${i}`, "x");
    const big = "x".repeat(49 * 1024);
    world.pushPolicy(
      `${manySecrets(1, "api")}variables:\n  BIG: { value: "${big}", repositories: [api] }\n  SMALL: { value: s, org: { visibility: all } }\n`,
    );
    const plan = await world.sync({ dryRun: true });
    expect(plan.warnings).toEqual([
      "repo api would have 91 secrets, near GitHub's limit of 100 repository secrets",
      "variable BIG in repo api is 49.0 KB, over GitHub's limit of 48 KB per variable: its write will fail",
    ]);
    const applied = await world.sync();
    expect(applied.failures.map((f) => [f.name, f.error])).toEqual([["BIG", "422 Validation Failed"]]);
  });
});
