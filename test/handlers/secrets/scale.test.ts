import { afterEach, describe, expect, it } from "vitest";
import { createWorld, type World } from "./world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const SECRET_ENV = { STEWARD_SECRET_NPM_TOKEN: "npm-token-value-1", STEWARD_SECRET_SHARED: "shared-value" };

describe("secrets sync at scale", () => {
  // Enough repositories for several pages of the installation's list and for each pattern to
  // select a hundred of them; more would prove the same at more cost.
  it("a no-change sync of 250 repositories costs only list reads", async () => {
    const repos = Array.from({ length: 250 }, (_, i) => `repo-${String(i).padStart(3, "0")}`);
    world = await createWorld({ repos, env: { ...SECRET_ENV } });
    world.pushPolicy(`
secrets:
  NPM_TOKEN: { from: env:STEWARD_SECRET_NPM_TOKEN, repositories: ['repo-*'] }
  ORG_TOKEN: { from: env:STEWARD_SECRET_SHARED, org: { visibility: selected, repositories: ['repo-0*'] } }
variables:
  REGION: { value: eu-west-1, repositories: ['repo-1*'] }
prune: true
`);
    const first = await world.sync({ fanOut: { concurrency: 32 } });
    expect(first.failures).toEqual([]);
    expect(first.applied).toHaveLength(250 + 1 + 100);

    const requests = world.mark();
    const second = await world.sync({ fanOut: { concurrency: 16 } });
    const made = requests();
    expect(second.applied.map((r) => `${r.key} ${r.reason}`)).toEqual([]);
    expect(made.filter((r) => r.method !== "GET")).toEqual([]);
    // 251 repositories (250 + admin) at 100 a page, the contents read of the policy,
    // one secrets list per repository, one variables list per repo-1xx, the org list and its selection.
    const count = (pred: (r: { path: string }) => boolean) => made.filter(pred).length;
    expect(count((r) => r.path === "/installation/repositories")).toBe(3);
    expect(count((r) => r.path.includes("/contents/"))).toBe(1);
    expect(count((r) => /^\/repos\/acme\/[^/]+\/actions\/secrets$/.test(r.path))).toBe(250);
    expect(count((r) => /^\/repos\/acme\/[^/]+\/actions\/variables$/.test(r.path))).toBe(100);
    expect(count((r) => r.path === "/orgs/acme/actions/secrets")).toBe(1);
    expect(count((r) => r.path === "/orgs/acme/actions/secrets/ORG_TOKEN/repositories")).toBe(1);
    expect(made).toHaveLength(3 + 1 + 250 + 100 + 1 + 1);
  }, 180_000);
});
