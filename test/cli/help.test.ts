// Every command answers --help (exit 0, usage on stdout) without doing anything: no service
// started, no demo played, no store opened; `steward --version` prints the version.
import { afterEach, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { allCommands } from "../../src/cli/main.js";
import { startChild } from "../service/child.js";

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function steward(args: string[]): Promise<{ code: number | null; out: string; dataDir: string }> {
  dir ??= await mkdtemp(join(tmpdir(), "steward-help-"));
  const dataDir = join(dir, `data-${args.join("-")}`);
  // APP_ID and an unreachable API: were `start` to run, it would start as a real app (and stay up).
  const run = startChild(
    {
      STEWARD_DATA_DIR: dataDir,
      APP_ID: "1",
      PRIVATE_KEY: "x",
      WEBHOOK_SECRET: "s",
      PORT: "0",
      GITHUB_API_URL: "http://127.0.0.1:9",
    },
    args,
  );
  const code = await run.exited;
  return { code, out: run.out(), dataDir };
}

const cases = [
  ...Object.keys(await allCommands()).map((name) => [name, "--help"]),
  ["start", "-h"],
  ["deliveries", "list", "--help"],
  ["deliveries", "replay", "--status", "dead", "--help"],
  ["sync", "--org", "acme", "--help"],
];

describe("steward --help and --version", () => {
  it.each(cases)("steward %s %s … prints its usage and exits 0 without side effects", async (...args) => {
    const { code, out, dataDir } = await steward(args);
    expect(code, out).toBe(0);
    expect(out).toContain(`usage: steward ${args[0]}`);
    expect(existsSync(dataDir)).toBe(false);
    expect(out).not.toMatch(/listening on|sandbox mode|demo:/);
  });

  it("steward --version prints the version", async () => {
    const { code, out } = await steward(["--version"]);
    expect(code).toBe(0);
    expect(out.trim()).toBe(`steward ${pkg.version}`);
  });
});
