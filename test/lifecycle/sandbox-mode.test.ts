// `steward start` with no APP_ID (sandbox mode) honours the README's other settings (PORT,
// STEWARD_HANDLERS, STEWARD_*), its banner's control-surface link answers, and the commands it
// prints for a signed webhook by hand, run as printed, get a delivery recorded and handled.
import { afterEach, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { startChild } from "../service/child.js";
import { freePort, until } from "./support.js";

let dir: string | undefined;
let stop: (() => void) | undefined;
afterEach(async () => {
  stop?.();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = stop = undefined;
});

describe("sandbox mode (no APP_ID)", () => {
  it("applies PORT and STEWARD_HANDLERS, links a control surface that answers, and prints a signed webhook that works", async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-sandbox-mode-"));
    const port = await freePort();
    const run = startChild({
      PORT: String(port),
      STEWARD_SANDBOX_PORT: "0",
      STEWARD_DATA_DIR: join(dir, "data"),
      STEWARD_HANDLERS: resolve(__dirname, "../engine/fixtures/handler-module.ts"),
      STEWARD_SHUTDOWN_TIMEOUT: "2s",
      LOG_LEVEL: "info",
    });
    stop = () => run.proc.exitCode === null && run.proc.kill("SIGKILL");
    await until(() => run.out().includes("(202: recorded"), "the banner", run.out);
    const out = run.out();
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    const control = /control surface: (http:\/\/\S+\/_sandbox\/)/.exec(out)?.[1];
    expect(control, out).toBeDefined();
    const index = await fetch(control!);
    expect(index.status).toBe(200);
    expect(JSON.stringify(await index.json())).toContain("POST /_sandbox/control/pushFiles");

    // The banner's commands, exactly as printed.
    const lines = out.split("\n");
    const first = lines.findIndex((l) => l.includes("signed webhook:"));
    const script = lines
      .slice(first, first + 4)
      .map((l, i) => (i === 0 ? l.replace(/^.*signed webhook:\s*/, "") : l.trim()))
      .join("\n");
    expect(script).toContain(`http://127.0.0.1:${port}/api/github/webhooks`);
    expect(out).not.toMatch(/-hmac '[0-9a-f]{20,}'/); // the secret is read from its file, not printed
    await promisify(execFile)("bash", ["-c", script]);
    await until(() => /"msg":"handler extra done"/.test(run.out()), "the handler from STEWARD_HANDLERS", run.out);

    run.proc.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });
});
