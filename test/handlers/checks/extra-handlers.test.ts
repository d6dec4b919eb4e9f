// steward/config validates the sections of STEWARD_HANDLERS modules as the service loads them:
// the built-in check is handed the built-in modules plus those, through the sandbox hub.
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Steward } from "../../../src/app.js";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import { checks } from "../../../handlers/index.js";

const ORG = "acme";
const FILE = ".github/steward.yml";
const EXTRA = relative(process.cwd(), join(import.meta.dirname, "../../engine/fixtures/policy-module.ts"));
let stack: SandboxStack;

beforeAll(async () => {
  stack = await startSandboxStack({ handlers: [checks], env: { STEWARD_HANDLERS: EXTRA } });
});
afterAll(async () => {
  await stack?.close();
});

async function configRun(files: Record<string, string>) {
  const pr = stack.hub.control.openPullRequest({
    owner: ORG,
    repo: "web",
    head: `extra-${Object.values(files).join("").length}`,
    title: "Policy",
    files,
  });
  await stack.hub.control.settled();
  await (stack.steward as unknown as Steward).engine.idle();
  const [run] = stack.hub.domains.checks.checkRuns({
    owner: ORG,
    repo: "web",
    sha: pr.head_sha,
    name: "steward/config",
  }) as { conclusion: string; annotations: { start_line: number; message: string }[] }[];
  return run;
}

describe("steward/config and STEWARD_HANDLERS", () => {
  it("knows an extra module's section: a typo in it fails at its line, a right key passes", async () => {
    const failing = await configRun({ [FILE]: "rerun:\n  enabled: true\nextra:\n  onn: true\n" });
    expect(failing?.conclusion).toBe("failure");
    expect(failing!.annotations.map((a) => `${a.start_line} ${a.message}`)).toEqual([
      `4 unknown key "onn" in "extra" (did you mean "on"?)`,
    ]);
    const passing = await configRun({ [FILE]: "rerun:\n  enabled: true\nextra:\n  on: true\n" });
    expect(passing?.conclusion).toBe("success");
  });
});
