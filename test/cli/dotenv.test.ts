// `.env` loading at CLI start: values from `.env` in the working directory fill in what the
// environment lacks and never replace what it has; proven on the parser and on a real
// `steward receive` run whose handlers are named only in `.env`.
import { spawn } from "node:child_process";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DotEnvError, loadDotEnv } from "../../src/cli/dotenv.js";
import { examplePayload } from "../engine/helpers.js";
import { BIN } from "../service/child.js";

const HANDLER = join(import.meta.dirname, "..", "engine", "fixtures", "handler-module.ts");
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "steward-dotenv-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function steward(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string; err: string }> {
  const proc = spawn(process.execPath, [BIN, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  proc.stdout.on("data", (d) => (out += String(d)));
  proc.stderr.on("data", (d) => (err += String(d)));
  return new Promise((resolve) => proc.on("close", (code) => resolve({ code, out, err })));
}

describe(".env loading", () => {
  it("fills in missing variables, keeps existing ones, and parses quotes, export and comments", async () => {
    await writeFile(
      join(dir, ".env"),
      '# local settings\nexport LOG_LEVEL=debug\nAPP_ID=999\nPRIVATE_KEY="-----BEGIN-----\\nabc\\n-----END-----"\nEMPTY=\n',
    );
    const env: NodeJS.ProcessEnv = { APP_ID: "42" };
    expect(loadDotEnv(env, dir).sort()).toEqual(["EMPTY", "LOG_LEVEL", "PRIVATE_KEY"]);
    expect(env).toEqual({
      APP_ID: "42",
      LOG_LEVEL: "debug",
      PRIVATE_KEY: "-----BEGIN-----\nabc\n-----END-----",
      EMPTY: "",
    });
  });

  it("is a no-op without a .env file, and a clear error when .env cannot be read", async () => {
    const env: NodeJS.ProcessEnv = {};
    expect(loadDotEnv(env, dir)).toEqual([]);
    expect(env).toEqual({});
    await mkdir(join(dir, ".env"));
    expect(() => loadDotEnv(env, dir)).toThrow(DotEnvError);
    expect(() => loadDotEnv(env, dir)).toThrow(/cannot read .*\.env: EISDIR/);
  });

  it("applies at CLI start: handlers named only in .env run, and the real environment wins over .env", async () => {
    await writeFile(join(dir, "ping.json"), JSON.stringify(examplePayload("ping")));
    await writeFile(join(dir, ".env"), `STEWARD_HANDLERS=${HANDLER}\n`);
    const fromFile = await steward(["receive", "--event", "ping", "--payload", "ping.json"], {});
    expect(fromFile.out).toMatch(/^extra: done/m);
    expect(fromFile.code).toBe(0);

    await writeFile(join(dir, ".env"), "STEWARD_HANDLERS=./no/such/handler.ts\n");
    const overridden = await steward(["receive", "--event", "ping", "--payload", "ping.json"], {
      STEWARD_HANDLERS: HANDLER,
    });
    expect(overridden.out).toMatch(/^extra: done/m);
    expect(overridden.code).toBe(0);
  });
});
