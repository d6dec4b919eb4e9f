// What a person new to Steward types first, run as they run it (`steward` as a child process, from
// the checkout): the shipped examples validate as they are, and `steward start ./index.js` (the
// `probot run ./index.js` habit) says how an app is loaded.
import { readdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { startChild } from "../service/child.js";

const root = resolve(__dirname, "../..");
const examples = join(root, "config/examples");

/** Every file under config/examples/, as a path relative to the checkout (as a person types it). */
function exampleFiles(dir = examples): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? exampleFiles(join(dir, e.name))
      : /\.ya?ml$/.test(e.name)
        ? [relative(root, join(dir, e.name))]
        : [],
  );
}

async function steward(args: string[], env: Record<string, string> = {}) {
  const run = startChild(env, args);
  // Run from the checkout, as the README's commands are.
  const code = await run.exited;
  return { code, out: run.out() };
}

describe("steward validate on the shipped examples", () => {
  const files = exampleFiles();

  it("finds the examples (secrets.yml among them)", () => {
    expect(files).toEqual(expect.arrayContaining(["config/examples/steward.yml", "config/examples/secrets.yml"]));
  });

  it.each(files)(
    "steward validate %s succeeds with no flags",
    async (file) => {
      const { code, out } = await steward(["validate", join(root, file)]);
      expect(code, out).toBe(0);
    },
    120_000,
  );

  it("a file not named steward.yml that fails as one is told about --document", async () => {
    // package.json is YAML too (JSON), and no steward.yml: its keys are unknown sections.
    const { code, out } = await steward(["validate", join(root, "package.json")]);
    expect(code).toBe(1);
    expect(out).toContain("name it with --document");
    expect(out).toContain("--document .github/steward/secrets.yml");
  }, 120_000);

  it("steward validate --help documents --document", async () => {
    const { code, out } = await steward(["validate", "--help"]);
    expect(code).toBe(0);
    expect(out).toMatch(/--document PATH\s+validate every FILE as this admin document/);
  }, 120_000);
});

describe("steward start with an app path", () => {
  it("refuses it and says how an app is loaded: STEWARD_HANDLERS=./index.js steward start", async () => {
    const { code, out } = await steward(["start", "./index.js"], { STEWARD_DATA_DIR: join(root, "never-created") });
    expect(code).toBe(2);
    expect(out).toContain('unexpected argument "./index.js"');
    expect(out).toContain("STEWARD_HANDLERS=./index.js steward start");
    expect(out).not.toMatch(/listening on|sandbox mode/);
  }, 120_000);
});
