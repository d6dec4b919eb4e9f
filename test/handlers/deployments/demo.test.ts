// The deployments demo scenario on a fresh sandbox stack with the built-in handlers.
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import scenario from "../../../src/sandbox/demo/scenarios/deployments.js";
import { startSandboxStack } from "../../../src/sandbox/stack.js";

describe("deployments demo scenario", () => {
  it("approves main, rejects a feature branch, holds through a freeze, then gates a critical repository on a holiday from the org calendar", async () => {
    const stack = await startSandboxStack({ logger: pino({ level: "silent" }) });
    try {
      const printed: string[] = [];
      const rows = await scenario.run(stack, (line) => printed.push(line));
      expect(rows.map((r) => r.result.split(":")[0])).toEqual([
        "Steward is the protection rule",
        "approved",
        "rejected",
        "policy reloaded",
        "waiting",
        "approved",
        "policy reloaded",
        "waiting",
        "approved",
      ]);
      expect(rows[1]!.result).toMatch(/checks `build`, `test` succeeded on [0-9a-f]{7}/);
      expect(rows[2]!.result).toContain("`feature/login` may not deploy to production (allowed: `main`)");
      expect(rows[4]!.result).toContain("deploy freeze until");
      expect(rows[4]!.result).toContain("(release candidate soak)");
      expect(printed.some((l) => l.startsWith("waiting for the freeze to end"))).toBe(true);
      expect(rows[7]!.result).toContain("organisation gate (tier: critical): deploy freeze until");
      // The critical repository is public and the admin repository private: the holiday's name is withheld.
      expect(rows[7]!.result).toContain("its reason is withheld");
      expect(rows[7]!.result).not.toContain("Company offsite");
      expect(rows[8]!.result).toContain("organisation gate (tier: critical): `main` may deploy to production");
    } finally {
      await stack.close();
    }
  });
});
