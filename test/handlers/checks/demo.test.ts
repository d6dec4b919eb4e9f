// The steward/config demo scenario on a fresh sandbox stack with the built-in handlers.
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import scenario from "../../../src/sandbox/demo/scenarios/config.js";
import { startSandboxStack } from "../../../src/sandbox/stack.js";

describe("steward/config demo scenario", () => {
  it("fails a typo'd key and a bad glob with an annotation each, goes green when fixed, and ignores other pull requests", async () => {
    const stack = await startSandboxStack({ logger: pino({ level: "silent" }) });
    try {
      const rows = await scenario.run(stack, () => {});
      expect(rows.map((r) => r.result)).toEqual([
        "failure: 2 problems in 1 policy file",
        '.github/steward.yml:6:7 unknown key "branchs" in "deployments.environments.staging" (did you mean "branches"?)',
        '.github/steward.yml:8:18 unclosed "[" in glob "release/[0-9"',
        "success: Policy valid: 1 file checked",
        "effective policy per section, 2 change(s) against main",
        "no check run, 0 API writes",
      ]);
    } finally {
      await stack.close();
    }
  });
});
