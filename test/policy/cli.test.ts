import { execFile } from "node:child_process";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { documentFor, validateFiles } from "../../src/cli/commands/validate.js";
import { testHandlers } from "./fixtures.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "steward-validate-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function file(name: string, text: string) {
  const path = join(dir, name);
  await mkdir(join(path, ".."), { recursive: true });
  await writeFile(path, text);
  return path;
}

async function validate(args: { files: string[]; org?: string; document?: string }) {
  let out = "";
  let err = "";
  const code = await validateFiles(
    args,
    testHandlers,
    (s) => (out += s),
    (s) => (err += s),
  );
  return { code, out, err };
}

describe("steward validate", () => {
  it("prints FILE:LINE:COL: message per problem and exits 1", async () => {
    const f = await file("bad.yml", "rerun:\n  max_atempts: 3\nchecks:\n  config: nope\n");
    const r = await validate({ files: [f] });
    expect(r.code).toBe(1);
    expect(r.out).toBe(
      `${f}:2:3: unknown key "max_atempts" in "rerun" (did you mean "max_attempts"?)\n${f}:4:11: "checks.config" must be boolean (got string)\n`,
    );
  });

  it("exits 0 printing the effective policy with defaults", async () => {
    const f = await file("good.yml", "checks:\n  config: false\n");
    const r = await validate({ files: [f] });
    expect(r).toMatchObject({ code: 0, err: "" });
    expect(parse(r.out)).toEqual({
      rerun: { enabled: true, max_attempts: 2, branches: ["main"], rules: [] },
      checks: { config: false },
    });
  });

  it("merges over an org file with --org, the same way the service does", async () => {
    const org = await file("org.yml", "rerun:\n  max_attempts: 4\n  branches: [a, b]\n");
    const f = await file("repo.yml", "rerun:\n  branches: [c]\n");
    const r = await validate({ files: [f], org });
    expect(parse(r.out).rerun).toEqual({ enabled: true, max_attempts: 4, branches: ["c"], rules: [] });
    const badOrg = await file("badorg.yml", "rerun: [\n");
    expect((await validate({ files: [f], org: badOrg })).out).toMatch(new RegExp(`^${badOrg}:2:1: YAML syntax error`));
  });

  it("validates a secrets.yml under a steward/ folder, or with --document, as that admin document", async () => {
    expect(documentFor("repo/.github/steward/secrets.yml")).toBe(".github/steward/secrets.yml");
    expect(documentFor("steward\\secrets.yaml")).toBe(".github/steward/secrets.yaml");
    expect(documentFor(".github/steward.yml")).toBeUndefined();
    const doc = await file("steward/secrets.yml", "secrets:\n  - name: lower\n    repositories: []\n");
    expect((await validate({ files: [doc] })).out).toBe(
      `${doc}:2:11: "secrets.0.name" must match pattern "^[A-Z_][A-Z0-9_]*$"\n`,
    );
    const plain = await file("plain.yml", "secrets:\n  - name: OK\n    repositories: [x]\n");
    expect((await validate({ files: [plain] })).code).toBe(1);
    const ok = await validate({ files: [plain], document: ".github/steward/secrets.yml" });
    expect(ok.code).toBe(0);
    expect(parse(ok.out)).toEqual({ secrets: [{ name: "OK", repositories: ["x"] }] });
  });

  it("reports an unreadable file as a problem, and several files with a header each", async () => {
    const missing = join(dir, "nope.yml");
    expect((await validate({ files: [missing] })).out).toBe(`${missing}:1:1: cannot read file: ENOENT\n`);
    const a = await file("a.yml", "checks: {config: true}\n");
    const b = await file("b.yml", "checks: {config: false}\n");
    const r = await validate({ files: [a, b] });
    expect(r.out).toContain(`# ${a}\n`);
    expect(r.out).toContain(`# ${b}\n`);
  });

  it("keeps warnings off stdout when the files are valid", async () => {
    const f = await file("warn.yml", "rerun:\n  max_attempts: 7\n  branches: ['*']\n");
    const r = await validate({ files: [f] });
    expect(r.code).toBe(0);
    expect(r.err).toBe(`${f}:2:17: warning: more than 5 attempts on every branch\n`);
    expect(parse(r.out).rerun.max_attempts).toBe(7);
  });

  it("runs as a command with the real handlers and exit codes", async () => {
    const bad = await file("cmd-bad.yml", "chekcs:\n  config: true\n");
    const good = await file("cmd-good.yml", "checks:\n  config: true\n");
    const bin = new URL("../../bin/steward.js", import.meta.url).pathname;
    const run = promisify(execFile);
    const failed = await run(process.execPath, [bin, "validate", bad, good]).catch((e) => e);
    expect(failed.code).toBe(1);
    expect(
      failed.stdout.startsWith(`${bad}:1:1: unknown section "chekcs" (did you mean "checks"?); known sections: `),
    ).toBe(true);
    expect(failed.stdout.trim().split("\n")).toHaveLength(1);
    const passed = await run(process.execPath, [bin, "validate", good]);
    expect(parse(passed.stdout).checks).toEqual({ config: true });
    const usage = await run(process.execPath, [bin, "validate"]).catch((e) => e);
    expect(usage.code).toBe(2);
  });

  it("knows the sections of STEWARD_HANDLERS modules, as the service does", async () => {
    const extra = await file(
      "extra-handler.mjs",
      'export default { name: "extra", events: [], policy: { key: "extra", schema: { type: "object", additionalProperties: false, properties: { on: { type: "boolean" } } }, defaults: { on: false } }, handle() {} };\n',
    );
    const f = await file("uses-extra.yml", "extra:\n  onn: true\n");
    const bin = new URL("../../bin/steward.js", import.meta.url).pathname;
    const failed = await promisify(execFile)(process.execPath, [bin, "validate", f], {
      env: { ...process.env, STEWARD_HANDLERS: extra },
    }).catch((e) => e);
    expect(failed.stdout).toBe(`${f}:2:3: unknown key "onn" in "extra" (did you mean "on"?)\n`);
  });
});
