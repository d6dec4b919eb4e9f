// Variables Steward has never written in a scope are created without listing the scope first: the
// create itself says whether one is there (409). One that is there is read and judged as a listed
// one would be (someone else's is left alone unless adopted), and that scope is listed from then on.
// Counted from the hub's own request log.
import { afterEach, describe, expect, it } from "vitest";
import { loadRecords } from "../../../handlers/secrets/records.js";
import { createWorld, ORG, type World } from "./world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const REPOS = ["svc-a", "svc-b", "svc-c"];
const POLICY = "variables:\n  REGION: { value: eu-west-1, repositories: ['svc-*'] }\n";
const variableLists = (rs: { method: string; path: string }[]) =>
  rs.filter((r) => r.method === "GET" && /^\/repos\/[^/]+\/[^/]+\/actions\/variables$/.test(r.path));

describe("variables created first", () => {
  it("a first sync writes each repository's variable with one request and no list read; the next sync lists and writes nothing", async () => {
    world = await createWorld({ repos: REPOS });
    world.pushPolicy(POLICY);
    const mark = world.mark();
    const first = await world.sync();
    const made = mark();
    expect(first.failures).toEqual([]);
    // Reported as a listed sync reports them: created because missing.
    expect(first.applied.map((r) => [r.scope, r.action, r.reason])).toEqual(
      REPOS.map((repo) => [{ level: "repo", repo }, "create", "missing"]),
    );
    expect(first.rows.map((r) => r.reason)).toEqual(REPOS.map(() => "missing"));
    expect(variableLists(made)).toEqual([]);
    expect(made.filter((r) => r.path.includes("/actions/variables"))).toEqual(
      REPOS.map((repo) => ({
        method: "POST",
        path: `/repos/${ORG}/${repo}/actions/variables`,
        query: "",
        status: 201,
      })).sort((a, b) => (a.path < b.path ? -1 : 1)),
    );
    for (const repo of REPOS)
      expect(world.h.domains.variables.valueIn({ owner: ORG, repo }, "REGION")).toBe("eu-west-1");
    const records = await loadRecords(world.store.kv, ORG);
    expect([...records.values()].map((r) => [r.name, r.created])).toEqual(REPOS.map(() => ["REGION", true]));

    // Recorded now: the next sync judges from the lists (drift repair), and has nothing to write.
    const again = world.mark();
    const second = await world.sync();
    expect(second.failures).toEqual([]);
    expect(second.applied).toEqual([]);
    expect(variableLists(again()).length).toBe(REPOS.length);
    expect(again().filter((r) => r.method !== "GET")).toEqual([]);
  });

  it("a variable someone else created is read on the refused create and left alone, and its scope is listed from then on", async () => {
    world = await createWorld({ repos: REPOS });
    world.h.domains.variables.setVariableOutOfBand({ owner: ORG, repo: "svc-b" }, "REGION", "us-east-1");
    world.pushPolicy(POLICY);
    const mark = world.mark();
    const first = await world.sync();
    const made = mark().filter((r) => r.path.startsWith(`/repos/${ORG}/svc-b/actions/variables`));
    expect(first.failures).toEqual([]);
    expect(first.applied.map((r) => (r.scope.level === "repo" ? r.scope.repo : ""))).toEqual(["svc-a", "svc-c"]);
    expect(made).toEqual([
      { method: "POST", path: `/repos/${ORG}/svc-b/actions/variables`, query: "", status: 409 },
      { method: "GET", path: `/repos/${ORG}/svc-b/actions/variables/REGION`, query: "", status: 200 },
    ]);
    expect(first.leftAlone.map((l) => [l.scope, l.name])).toEqual([[{ level: "repo", repo: "svc-b" }, "REGION"]]);
    expect(first.leftAlone[0]!.reason).toMatch(/^exists and Steward did not create it.*value differs from policy/);
    expect(
      first.rows.find((r) => r.name === "REGION" && r.scope.level === "repo" && r.scope.repo === "svc-b"),
    ).toMatchObject({ action: "unchanged", conflict: true });
    expect(world.h.domains.variables.valueIn({ owner: ORG, repo: "svc-b" }, "REGION")).toBe("us-east-1");

    // From now on svc-b is listed (a conditional read, free while unchanged), not created again.
    const again = world.mark();
    const second = await world.sync();
    const made2 = again().filter((r) => r.path.startsWith(`/repos/${ORG}/svc-b/actions/variables`));
    expect(second.applied).toEqual([]);
    expect(second.leftAlone.map((l) => l.name)).toEqual(["REGION"]);
    expect(made2.map((r) => [r.method, r.path])).toEqual([["GET", `/repos/${ORG}/svc-b/actions/variables`]]);
    expect(world.h.domains.variables.valueIn({ owner: ORG, repo: "svc-b" }, "REGION")).toBe("us-east-1");
  });

  it("a dry run lists every scope: its plan says what is there", async () => {
    world = await createWorld({ repos: REPOS });
    world.h.domains.variables.setVariableOutOfBand({ owner: ORG, repo: "svc-b" }, "REGION", "us-east-1");
    world.pushPolicy(POLICY);
    const mark = world.mark();
    const plan = await world.sync({ dryRun: true });
    expect(variableLists(mark()).length).toBe(REPOS.length);
    expect(plan.rows.map((r) => [r.scope.level === "repo" ? r.scope.repo : "", r.action, r.conflict ?? false])).toEqual(
      [
        ["svc-a", "create", false],
        ["svc-b", "unchanged", true],
        ["svc-c", "create", false],
      ],
    );
  });
});
