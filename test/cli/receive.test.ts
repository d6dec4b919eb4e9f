// `steward receive`: a payload file goes through the configured handlers (built-in and
// STEWARD_HANDLERS) once, against the in-process sandbox when APP_ID is unset, and each
// handler's outcome is printed; a failed handler makes the exit code 1.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "./capture.js";
import { examplePayload } from "../engine/helpers.js";

const fixture = (name: string) => relative(process.cwd(), join(import.meta.dirname, "..", "engine", "fixtures", name));
const saved = { APP_ID: process.env.APP_ID, STEWARD_HANDLERS: process.env.STEWARD_HANDLERS };
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "steward-receive-test-"));
  delete process.env.APP_ID;
  process.env.STEWARD_HANDLERS = [fixture("handler-module.ts"), fixture("probot-app.ts")].join(",");
});
afterEach(async () => {
  for (const [k, v] of Object.entries(saved))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  await rm(dir, { recursive: true, force: true });
});

async function payloadFile(name: string, payload: unknown): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, typeof payload === "string" ? payload : JSON.stringify(payload));
  return file;
}

describe("steward receive", () => {
  it("prints each handler's outcome for the payload, and exits 0 when none failed", async () => {
    const file = await payloadFile("ping.json", examplePayload("ping"));
    const { code, out } = await runCli(["receive", "--event", "ping", "--payload", file]);
    expect(out).toMatch(/^extra: done \(pinged by [0-9a-f-]{36}\)$/m);
    expect(out).toMatch(/^probot-app: skipped \(the app does not listen to ping\)$/m);
    expect(code).toBe(0);
  });

  it("exits 1 and prints the error when a handler failed", async () => {
    const file = await payloadFile("push.json", examplePayload("push"));
    const { code, out } = await runCli(["receive", "--event=push", `--payload=${file}`]);
    expect(out).toMatch(/^probot-app: failed \(this app cannot handle pushes\)$/m);
    expect(code).toBe(1);
  });

  it("refuses bad arguments and unreadable or non-JSON payloads with a clear message", async () => {
    expect((await runCli(["receive", "--payload", "x.json"])).err).toMatch(/--event needs an event name/);
    expect((await runCli(["receive", "--event", "push"])).err).toMatch(/--payload needs a JSON file/);
    const missing = await runCli(["receive", "--event", "push", "--payload", join(dir, "nope.json")]);
    expect([missing.code, missing.err]).toEqual([1, expect.stringMatching(/cannot read .*nope\.json: ENOENT/)]);
    const broken = await runCli([
      "receive",
      "--event",
      "push",
      "--payload",
      await payloadFile("bad.json", "{not json"),
    ]);
    expect([broken.code, broken.err]).toEqual([1, expect.stringMatching(/bad\.json is not valid JSON/)]);
  });
});
