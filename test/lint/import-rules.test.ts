// The one-way path (docs/architecture.md) is enforced by eslint.config.js. Each rule is checked
// here against an import that breaks it and one that keeps it, at the paths the rule names, so a
// config change that silently stops a rule from applying fails this test.
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const eslint = new ESLint({ cwd: process.cwd() });

async function problems(filePath: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${source}\nexport {};\n`, { filePath });
  return (result?.messages ?? []).map((m) => `${m.ruleId ?? "parse"}: ${m.message}`);
}

const broken: Array<[string, string, RegExp]> = [
  ["src/store/sqlite/deliveries.ts", `import { x } from "../../intake/receiver.js";`, /never reaches up the path/],
  ["src/store/contract.ts", `import { x } from "../engine/pool.js";`, /never reaches up the path/],
  ["src/api/client.ts", `import { x } from "../store/contract.js";`, /declares the interfaces it needs/],
  [
    "src/api/client.ts",
    `import { x } from "../coordination/redis/write-slots.js";`,
    /declares the interfaces it needs/,
  ],
  ["src/config/env.ts", `import { x } from "../policy/loader.js";`, /never imports policy/],
  ["src/cli/commands/flakes.ts", `import { x } from "../../../handlers/rerun/flake.js";`, /only through their list/],
  ["src/console/pages/x.ts", `import { x } from "../../../handlers/shared/visibility.js";`, /only through their list/],
  ["handlers/rerun/decide.ts", `import { x } from "../deployments/policy.js";`, /never imports another handler/],
  ["handlers/checks/index.ts", `import { x } from "../rerun/index.js";`, /never imports another handler/],
  ["handlers/rerun/facts.ts", `import { x } from "../../src/engine/run.js";`, /package entries/],
  ["handlers/secrets/execute.ts", `import { x } from "../../src/policy/loader.js";`, /package entries/],
  ["handlers/shared/impact.ts", `import { x } from "../rerun/decide.js";`, /never imports a single handler/],
];

const kept: Array<[string, string]> = [
  ["src/engine/pool.ts", `import { x } from "../store/contract.js";`],
  ["src/app.ts", `import { x } from "../handlers/index.js";`],
  ["src/coordination/redis/write-slots.ts", `import { x } from "../../api/types.js";`],
  ["handlers/rerun/decide.ts", `import { x } from "../../src/index.js";`],
  ["handlers/rerun/policy.ts", `import { x } from "../../src/policy/index.js";`],
  ["handlers/rerun/execute.ts", `import { x } from "../shared/visibility.js";`],
  ["handlers/rerun/execute.ts", `import { x } from "./decide.js";`],
];

describe("import rules", () => {
  it.each(broken)("refuse %s importing: %s", async (file, source, why) => {
    const found = await problems(file, source);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^no-restricted-imports: /);
    expect(found[0]).toMatch(why);
  });

  it.each(kept)("allow %s importing: %s", async (file, source) => {
    expect(await problems(file, source)).toEqual([]);
  });
});
