import { describe, expect, it } from "vitest";
import {
  adminRepoFor,
  decideNewRepositories,
  decidePullRequest,
  decidePush,
  periodicTask,
} from "../../../handlers/secrets/decide.js";

const push = {
  ref: "refs/heads/main",
  after: "abc",
  defaultBranch: "main",
  owner: "acme",
  repo: "admin",
  deleted: false,
  commits: [{ modified: [".github/steward/secrets.yml"] }],
};

describe("decide", () => {
  it.each([
    ["admin", "acme", "admin"],
    ["acme/admin", "acme", "admin"],
    ["acme/admin", "ACME", "admin"],
    ["other/admin", "acme", undefined],
  ])("adminRepoFor(%s, %s) = %s", (config, org, want) => expect(adminRepoFor(config, org)).toBe(want));

  it.each([
    ["policy push to default branch syncs", push, "sync"],
    ["other repository", { ...push, repo: "web" }, "skip"],
    ["other branch", { ...push, ref: "refs/heads/dev" }, "skip"],
    ["deleted branch", { ...push, deleted: true }, "skip"],
    ["push not touching the policy", { ...push, commits: [{ modified: ["README.md"] }] }, "skip"],
    ["policy removed", { ...push, commits: [{ removed: [".github/steward/secrets.yml"] }] }, "sync"],
    [
      "20 commits may hide the policy change",
      { ...push, commits: Array.from({ length: 20 }, () => ({ modified: ["x"] })) },
      "sync",
    ],
  ])("%s", (_t, facts, want) => {
    const d = decidePush(facts, "admin");
    expect(d.decision).toBe(want);
    if (d.decision === "sync") expect(d.report).toEqual({ repo: "admin", headSha: "abc" });
  });

  it("pull requests: files are read only for the admin repository, plan only when the policy changes", () => {
    const pr = {
      action: "opened",
      owner: "acme",
      repo: "admin",
      number: 7,
      headSha: "h",
      headRef: "feature",
      baseRef: "main",
      defaultBranch: "main",
    };
    expect(decidePullRequest({ ...pr, baseRef: "release" }, "admin").decision).toBe("skip");
    expect(decidePullRequest({ ...pr, repo: "web" }, "admin").decision).toBe("skip");
    expect(decidePullRequest({ ...pr, action: "closed" }, "admin").decision).toBe("skip");
    expect(decidePullRequest(pr, "admin").decision).toBe("need_files");
    expect(decidePullRequest({ ...pr, files: ["README.md"] }, "admin").decision).toBe("skip");
    const plan = decidePullRequest({ ...pr, files: [".github/steward/secrets.yml"] }, "admin");
    expect(plan).toMatchObject({ decision: "plan", org: "acme", headSha: "h", pullNumber: 7 });
    expect(plan).not.toHaveProperty("fork");
  });

  it("a fork's pull request is planned as a fork: the handler then resolves nothing of it", () => {
    const pr = {
      action: "opened",
      owner: "acme",
      repo: "admin",
      number: 7,
      headSha: "h",
      headRef: "x",
      baseRef: "main",
      defaultBranch: "main",
      files: [".github/steward/secrets.yml"],
    };
    const plan = decidePullRequest({ ...pr, fork: "mallory/admin" }, "admin");
    expect(plan).toMatchObject({ decision: "plan", fork: "mallory/admin" });
    expect((plan as { reasons: string[] }).reasons.join()).toContain("from fork mallory/admin");
  });

  it("new repositories sync only themselves", () => {
    expect(decideNewRepositories("acme", ["web"], "repository.created")).toMatchObject({
      decision: "sync",
      onlyRepos: ["web"],
    });
    expect(decideNewRepositories("acme", [], "x").decision).toBe("skip");
  });

  it("periodic task keys are stable within a period and advance with it", () => {
    const h = 3_600_000;
    const a = periodicTask(1, new Date(10 * h + 5), h);
    expect(a).toEqual(periodicTask(1, new Date(10 * h + 999_000), h));
    expect(a.runAt.getTime()).toBe(11 * h);
    expect(periodicTask(1, new Date(11 * h + 1), h).key).not.toBe(a.key);
  });
});
