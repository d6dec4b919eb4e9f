// steward/config end to end: the sandbox hub delivers pull request webhooks to a running
// Steward, which reads the files through the hub's contents API and reports check runs there.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Steward } from "../../src/app.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import checks from "../../handlers/checks/index.js";

const ORG = "acme";
const FILE = ".github/steward.yml";
let stack: SandboxStack;

async function settle(): Promise<void> {
  await stack.hub.control.settled();
  await (stack.steward as unknown as Steward).engine.idle();
}

const configRuns = (repo: string, sha: string) =>
  stack.hub.domains.checks.checkRuns({ owner: ORG, repo, sha, name: "steward/config" }) as { conclusion: string; output: { title: string; summary: string }; annotations: { path: string; start_line: number; start_column?: number; message: string }[] }[];
const appWrites = (from: number) => stack.hub.control.requests().slice(from).filter((r: { method: string; auth: string }) => r.method !== "GET" && r.auth === "installation");

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

    const fix = stack.hub.control.pushToPullRequest({ owner: ORG, repo: "web", number: pr.number, files: { [FILE]: "rerun:\n  enabled: true\n  max_attempts: 3\n  branches:\n    - main\n    - 'release/*'\n" } });
    await settle();
    const runs = configRuns("web", fix.sha);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.conclusion).toBe("success");
    expect(runs[0]!.annotations).toEqual([]);
    expect(runs[0]!.output.summary).toContain("`rerun.max_attempts`: `2` → `3`");
  });

  it("a pull request that touches no policy file gets no check run and no write", async () => {
    const mark = stack.hub.control.requests().length;
    const pr = stack.hub.control.openPullRequest({ owner: ORG, repo: "web", head: "just-code", title: "Code", files: { "src/index.js": "export const hello = () => 'hi';\n" } });
    await settle();
    expect(configRuns("web", pr.head_sha)).toEqual([]);
    expect(appWrites(mark)).toEqual([]);
  });

  it("a fork's pull request is read for the report", async () => {
    const pr = stack.hub.control.openPullRequest({ owner: ORG, repo: "web", head: "fork-policy", title: "From a fork", fromFork: true, files: { [FILE]: "checks:\n  config: nope\n" } });
    await settle();
    const [run] = configRuns("web", pr.head_sha);
    expect(run?.conclusion).toBe("failure");
    expect(run!.output.summary).toContain("comes from a fork");
    expect(run!.annotations.map((a) => `${a.start_line}:${a.start_column}`)).toEqual(["2:11"]);
  });
});
