// `steward run` / `steward start` in sandbox mode as a child process, for tests that act through
// the hub's HTTP control surface and read the hub back over its REST API as a user would.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { startChild } from "../service/child.js";
import { until } from "../lifecycle/support.js";

/** Calls the hub's control function `fn` over HTTP (`{ args: [...] }` or one options object). */
export async function control(hub: string, fn: string, body: unknown) {
  const res = await fetch(`${hub}/_sandbox/control/${fn}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { result?: any; message?: string } };
}

/**
 * A temporary directory and the child started in it, both gone after each test of the file that
 * calls this (at its top level).
 */
export function sandboxChildren() {
  let dir: string | undefined;
  let stop: (() => void) | undefined;
  afterEach(async () => {
    stop?.();
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = stop = undefined;
  });
  return {
    async tempDir(prefix: string): Promise<string> {
      dir = await mkdtemp(join(tmpdir(), prefix));
      return dir;
    },
    /** `steward ARGS` with a data directory under `dataRoot`, up to its sandbox banner; the hub's URL. */
    async start(args: string[], dataRoot: string, env: Record<string, string> = {}) {
      const child = startChild(
        {
          PORT: "0",
          STEWARD_DATA_DIR: join(dataRoot, "data"),
          STEWARD_SHUTDOWN_TIMEOUT: "2s",
          LOG_LEVEL: "info",
          ...env,
        },
        args,
      );
      stop = () => child.proc.exitCode === null && child.proc.kill("SIGKILL");
      await until(() => child.out().includes("(202: recorded"), "the banner", child.out);
      const hub = /hub \(REST API\):\s+(http:\/\/\S+)/.exec(child.out())![1]!;
      return { ...child, hub };
    },
  };
}

/** `GET path` on the hub as `login` (a user token from the control surface), the JSON answer. */
export async function readAs(hub: string, login: string, path: string): Promise<any> {
  const token = (await control(hub, "userToken", { args: [login] })).body.result as string;
  const res = await fetch(`${hub}${path}`, { headers: { Authorization: `token ${token}` } });
  return res.json();
}

/**
 * Reads until `done` holds for what `read` gave (up to two minutes; a failed read, e.g. while the
 * service stops, is just not counted); the last value read.
 */
export async function pollUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  output: () => string,
): Promise<T> {
  const deadline = Date.now() + 120_000;
  let last: T | undefined;
  while (Date.now() < deadline) {
    try {
      last = await read();
      if (done(last)) return last;
    } catch {
      // Not counted: the next read decides.
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}\n${JSON.stringify(last)}\n${output().slice(-4000)}`);
}
