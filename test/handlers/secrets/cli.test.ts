// `steward sync` against the sandbox hub, configured exactly as the service would be.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSyncArgs } from "../../../handlers/secrets/commands.js";
import { main } from "../../../src/cli/main.js";
import type { CommandIo } from "../../../src/cli/io.js";
import { createHub, type HubHandle } from "../../../src/sandbox/hub.js";
import { syncIo } from "./sync-io.js";

const VALUE = "cli-secret-value";
const run = (args: string[], io: CommandIo) => main(["sync", ...args], io);
let h: HubHandle;
let dataDir: string;

const io = () =>
  syncIo(h, dataDir, {
    STEWARD_ADMIN_REPO: ".github",
    STEWARD_CLI_TOKEN: VALUE,
    STEWARD_SECRET_SOURCES: "acme=env:STEWARD_CLI_",
  });

beforeAll(async () => {
  h = await createHub({ seed: "demo" });
  dataDir = await mkdtemp(join(tmpdir(), "steward-sync-cli-"));
  process.env.STEWARD_CLI_TOKEN = VALUE; // policy validation reads the process environment
  h.control.pushFiles({
    owner: "acme",
    repo: ".github",
    files: {
      ".github/steward/secrets.yml":
        "secrets:\n  CLI_TOKEN: { from: env:STEWARD_CLI_TOKEN, repositories: [api] }\nvariables:\n  REGION: { value: eu, repositories: [web] }\n",
    },
  });
});
afterAll(async () => {
  await h?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe("steward sync", () => {
  it("parses its arguments", () => {
    expect(parseSyncArgs(["--org", "acme", "--dry-run"])).toEqual({
      org: "acme",
      dryRun: true,
      concurrency: undefined,
      wait: false,
      force: false,
    });
    expect(parseSyncArgs(["--org=acme", "--concurrency", "4"])).toEqual({
      org: "acme",
      dryRun: false,
      concurrency: 4,
      wait: false,
      force: false,
    });
    expect(parseSyncArgs([])).toBe("--org is required");
    expect(parseSyncArgs(["--org", "a", "--concurrency", "0"])).toMatch(/positive/);
    expect(parseSyncArgs(["--bogus"])).toMatch(/unknown argument/);
  });

  it("--dry-run prints the plan and writes nothing; a real run applies it; a second run changes nothing", async () => {
    const before = h.control.requests().length;
    const dry = io();
    expect(await run(["--org", "acme", "--dry-run"], dry)).toBe(0);
    expect(dry.stdout).toMatch(/repo api\s+CLI_TOKEN\s+secret\s+create\s+missing/);
    expect(dry.stdout).toMatch(/repo web\s+REGION\s+variable\s+create\s+missing/);
    expect(dry.stdout).toContain("dry run: nothing applied.");
    expect(
      h.control
        .requests()
        .slice(before)
        .filter((r) => r.method !== "GET" && !r.path.includes("access_tokens")),
    ).toEqual([]);

    const real = io();
    expect(await run(["--org", "acme"], real)).toBe(0);
    expect(real.stdout).toContain("applied: 2 created, 0 updated, 0 deleted.");
    expect(h.domains.secrets.openedValue({ owner: "acme", repo: "api" }, "CLI_TOKEN")).toBe(VALUE);

    const again = io();
    expect(await run(["--org", "acme"], again)).toBe(0);
    expect(again.stdout).toContain("applied: 0 created, 0 updated, 0 deleted.");
    for (const o of [dry, real, again]) expect(o.stdout + o.stderr).not.toContain(VALUE);
  });

  it("fails clearly for an organisation without the app, bad usage and bad configuration", async () => {
    const none = io();
    expect(await run(["--org", "nobody"], none)).toBe(1);
    expect(none.stderr).toMatch(/not installed on nobody/);
    const bad = io();
    expect(await run(["--dry-run"], bad)).toBe(2);
    expect(bad.stderr).toContain("usage: steward sync");
    const noConfig = io();
    noConfig.env = { STEWARD_DATA_DIR: dataDir };
    expect(await run(["--org", "acme"], noConfig)).toBe(2);
    expect(noConfig.stderr).toMatch(/configuration/);
  });
});
