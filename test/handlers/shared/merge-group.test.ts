// steward/config and steward/plan on merge groups: the sandbox hub queues a pull request, sends
// merge_group checks_requested, and Steward reports both checks on the group's head commit.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import { settle as settleStack } from "../rerun/stack.js";
import { checks } from "../../../handlers/index.js";
import secrets from "../../../handlers/secrets/index.js";
import { mergeGroupOf } from "../../../handlers/shared/merge-group.js";

const ORG = "acme";
const ADMIN = ".github";
let stack: SandboxStack;

const settle = () => settleStack(stack);
const check = (repo: string, sha: string, name: string) =>
  stack.hub.domains.checks.checkRuns({ owner: ORG, repo, sha, name })[0] as
    { conclusion: string; output: { title: string } } | undefined;

beforeAll(async () => {
  process.env.STEWARD_E2E_MQ_TOKEN = "mq-token-value";
  process.env.STEWARD_SECRET_SOURCES = `${ORG}=env:STEWARD_E2E_`;
  stack = await startSandboxStack({ handlers: [checks, secrets] });
});
afterAll(() => stack?.close());

describe("Steward's pull request checks on merge groups", () => {
  it("reports steward/config and steward/plan on the group's head commit, as on the pull request", async () => {
    const files = {
      ".github/steward.yml": "rerun:\n  enabled: true\n  max_attempts: 3\n",
      ".github/steward/secrets.yml":
        "secrets:\n  MQ_TOKEN:\n    from: env:STEWARD_E2E_MQ_TOKEN\n    repositories: [api]\n",
    };
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: ADMIN,
      head: "queue-policy",
      title: "Policy through the queue",
      files,
    });
    await settle();
    const group = stack.hub.control.enqueuePullRequest({ owner: ORG, repo: ADMIN, number: pr.number });
    await settle();

    for (const name of ["steward/config", "steward/plan"]) {
      const onPull = check(ADMIN, pr.head_sha, name);
      const onGroup = check(ADMIN, group.headSha, name);
      expect(onGroup, name).toBeDefined();
      expect(onGroup!.conclusion).toBe(onPull!.conclusion);
      expect(onGroup!.output.title).toBe(onPull!.output.title);
    }
    expect(check(ADMIN, group.headSha, "steward/config")!.conclusion).toBe("success");
    expect(check(ADMIN, group.headSha, "steward/plan")!.output.title).toBe(
      "1 to create, 0 to update, 0 to delete, 0 unchanged",
    );
    // Planned only: the queue's commit is not the default branch.
    expect(stack.hub.domains.secrets.openedValue({ owner: ORG, repo: "api" }, "MQ_TOKEN")).toBeUndefined();
  });

  it("reads the pull request a group ref names, and skips other actions", () => {
    const base = { repository: { name: "web", owner: { login: ORG } } };
    const group = {
      head_sha: "b".repeat(40),
      base_sha: "a".repeat(40),
      base_ref: "refs/heads/release/1.x",
      head_ref: `refs/heads/gh-readonly-queue/release/1.x/pr-42-${"a".repeat(40)}`,
    };
    expect(mergeGroupOf({ ...base, action: "checks_requested", merge_group: group })).toEqual({
      owner: ORG,
      repo: "web",
      number: 42,
      headSha: group.head_sha,
      baseSha: group.base_sha,
      baseRef: "release/1.x",
    });
    expect(mergeGroupOf({ ...base, action: "destroyed", merge_group: group })).toEqual({
      skip: "merge_group.destroyed is not a checks request",
    });
    expect(
      mergeGroupOf({ ...base, action: "checks_requested", merge_group: { ...group, head_ref: "refs/heads/main" } }),
    ).toEqual({ skip: "merge group ref refs/heads/main names no pull request" });
  });
});
