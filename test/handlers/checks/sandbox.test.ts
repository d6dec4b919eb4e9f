// steward/config end to end: the sandbox hub delivers pull request webhooks to a running
// Steward, which reads the files through the hub's contents API and reports check runs there.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import { checks } from "../../../handlers/index.js";
import { configRuns as configRunsOf, settle as settleStack } from "./config-stack.js";

const ORG = "acme";
const FILE = ".github/steward.yml";
let stack: SandboxStack;

const settle = () => settleStack(stack);

const configRuns = (repo: string, sha: string) => configRunsOf(stack, ORG, repo, sha);
const appWrites = (from: number) =>
  stack.hub.control
    .requests()
    .slice(from)
    .filter((r: { method: string; auth: string }) => r.method !== "GET" && r.auth === "installation");

beforeAll(async () => {
  stack = await startSandboxStack({ handlers: [checks] });
});
afterAll(async () => {
  await stack?.close();
});

describe("steward/config through the sandbox hub", () => {
  it("demo: a typo'd key and a bad glob fail with two annotations on their lines; fixing turns it green", async () => {
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "web",
      head: "steward-policy",
      title: "Add a Steward policy",
      files: { [FILE]: "rerun:\n  enabled: true\n  max_atempts: 3\n  branches:\n    - main\n    - 'release/[0-9'\n" },
    });
    await settle();
    const [failing] = configRuns("web", pr.head_sha);
    expect(failing?.conclusion).toBe("failure");
    expect(failing!.annotations.map((a) => `${a.path}:${a.start_line}:${a.start_column} ${a.message}`)).toEqual([
      `${FILE}:3:3 unknown key "max_atempts" in "rerun" (did you mean "max_attempts"?)`,
      `${FILE}:6:7 unclosed "[" in glob "release/[0-9"`,
    ]);

    const fix = stack.hub.control.pushToPullRequest({
      owner: ORG,
      repo: "web",
      number: pr.number,
      files: { [FILE]: "rerun:\n  enabled: true\n  max_attempts: 3\n  branches:\n    - main\n    - 'release/*'\n" },
    });
    await settle();
    const runs = configRuns("web", fix.sha);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.conclusion).toBe("success");
    expect(runs[0]!.annotations).toEqual([]);
    expect(runs[0]!.output.summary).toContain("`rerun.max_attempts`: `2` → `3`");
  });

  it("a pull request that touches no policy file gets no check run and no write", async () => {
    const mark = stack.hub.control.requests().length;
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "web",
      head: "just-code",
      title: "Code",
      files: { "src/index.js": "export const hello = () => 'hi';\n" },
    });
    await settle();
    expect(configRuns("web", pr.head_sha)).toEqual([]);
    expect(appWrites(mark)).toEqual([]);
  });

  it("a fork's pull request is read for the report", async () => {
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "web",
      head: "fork-policy",
      title: "From a fork",
      fromFork: true,
      files: { [FILE]: "checks:\n  config: nope\n" },
    });
    await settle();
    const [run] = configRuns("web", pr.head_sha);
    expect(run?.conclusion).toBe("failure");
    expect(run!.output.summary).toContain("comes from a fork");
    expect(run!.annotations.map((a) => `${a.start_line}:${a.start_column}`)).toEqual(["2:11"]);
  });

  it("never shows the private admin repository's policy in a public repository's check or a fork's, and says what is withheld", async () => {
    const SECRET_BITS = ["PRIVATE-WORKFLOW-7f3a", "private-branch-7f3a"];
    stack.hub.control.pushFiles({
      owner: ORG,
      repo: ".github",
      files: {
        [FILE]: `rerun:\n  enabled: true\n  workflows: ["${SECRET_BITS[0]}"]\n  branches: ["${SECRET_BITS[1]}/*"]\n  max_attempts: 3\n`,
      },
      message: "org policy",
    });
    const change = { [FILE]: "rerun:\n  max_attempts: 4\n" };
    const publicPr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "web",
      head: "org-merge-public",
      title: "Public",
      files: change,
    });
    const forkPr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "web",
      head: "org-merge-fork",
      title: "Fork",
      fromFork: true,
      files: change,
    });
    const privatePr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "api",
      head: "org-merge-private",
      title: "Private",
      files: change,
    });
    await settle();

    for (const [repo, pr] of [
      ["web", publicPr],
      ["web", forkPr],
    ] as const) {
      const [run] = configRuns(repo, pr.head_sha);
      expect(run?.conclusion).toBe("success");
      const shown = JSON.stringify(run);
      for (const bit of SECRET_BITS) expect(shown).not.toContain(bit);
      expect(run!.output.summary).toContain("The organisation's policy in `acme/.github` is withheld from this check");
      expect(run!.output.summary).toContain("`rerun.max_attempts`: `2` → `4`");
    }
    expect(configRuns("web", publicPr.head_sha)[0]!.output.summary).toContain(
      "this repository is public and that one is private",
    );
    expect(configRuns("web", forkPr.head_sha)[0]!.output.summary).toContain("this pull request comes from a fork");

    // A private repository's readers are the organisation's: the merged policy is shown there.
    const [merged] = configRuns("api", privatePr.head_sha);
    expect(merged!.output.summary).toContain(SECRET_BITS[0]);
    expect(merged!.output.summary).toContain("merged over `acme/.github`");
    expect(merged!.output.summary).not.toContain("withheld");
  });
});
