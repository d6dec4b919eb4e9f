import { readdirSync, readFileSync } from "node:fs";
import { Ajv } from "ajv";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { builtinHandlers } from "../../handlers/index.js";
import { generatedConfigFiles } from "../../src/policy/schema.js";
import { validatePolicyText } from "../../src/policy/validate.js";

const config = new URL("../../config/", import.meta.url);
const read = (name: string) => readFileSync(new URL(name, config), "utf8");

describe("generated config files", () => {
  for (const [name, content] of generatedConfigFiles(builtinHandlers, (v) => stringify(v))) {
    it(`config/${name} is what the handlers generate (run \`npm run schema\` after changing a section)`, () => {
      expect(read(name)).toBe(content);
    });
  }

  it("the editor schema accepts the example and rejects a typo, as validation does", () => {
    const schema = JSON.parse(read("steward.schema.json"));
    const check = new Ajv({ strict: false, allErrors: true }).compile(schema);
    const example = parse(read("examples/steward.yml"));
    expect(check(example), JSON.stringify(check.errors)).toBe(true);
    expect(check({ ...example, chekcs: {} })).toBe(false);
  });
});

describe("config/examples", () => {
  const saved = { ...process.env };
  beforeEach(() => {
    // The example secrets read these from the environment of the machine Steward runs on.
    process.env.NPM_TOKEN = "example";
    process.env.DEPLOY_KEY = "example";
  });
  afterEach(() => {
    process.env = { ...saved };
  });

  const examples = readdirSync(new URL("examples/", config)).filter((f) => f.endsWith(".yml"));
  it("has a steward.yml and a secrets.yml", () => {
    expect(examples).toEqual(expect.arrayContaining(["steward.yml", "secrets.yml"]));
  });
  for (const name of examples) {
    it(`examples/${name} validates clean`, () => {
      const document = name === "steward.yml" ? undefined : `.github/steward/${name}`;
      const r = validatePolicyText(read(`examples/${name}`), {
        file: name,
        handlers: builtinHandlers,
        ...(document ? { document } : {}),
      });
      expect(r.problems).toEqual([]);
    });
  }

  it("the example sets every section the handlers declare", () => {
    const keys = builtinHandlers.flatMap((h) => (h.policy ? [h.policy.key] : []));
    expect(Object.keys(parse(read("examples/steward.yml"))).sort()).toEqual([...keys].sort());
  });
});
