// A Valkey server for tests, from the machine's valkey-server (Debian's package): one node on a
// free loopback port, in a temporary directory, nothing persisted, handed out once it answers.
// Torn down by `stop()`. Tests skip (with a printed reason) where valkey-server is missing.
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ask, freeNodePort, sleep, waitUntil } from "./cluster-support.js";

const found = spawnSync("valkey-server", ["--version"], { encoding: "utf8" });
export const valkeyAvailable = !found.error && found.status === 0;
if (!valkeyAvailable)
  console.warn(`Valkey tests skipped: valkey-server not found (${found.error?.message ?? found.stderr})`);

export interface TestValkey {
  /** `redis://127.0.0.1:<port>/0`: what an operator would set STEWARD_REDIS_URL to. */
  url: string;
  /** The server's own version line, e.g. "Valkey server v=8.0.1 ...". */
  version: string;
  stop(): Promise<void>;
}

export async function startValkey(): Promise<TestValkey> {
  const port = await freeNodePort();
  const dir = await mkdtemp(join(tmpdir(), "steward-valkey-"));
  const proc = spawn(
    "valkey-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--save",
      "",
      "--appendonly",
      "no",
      "--daemonize",
      "no",
      "--logfile",
      join(dir, "valkey.log"),
    ],
    { stdio: "ignore" },
  );
  const exited = new Promise<void>((r) => proc.once("exit", () => r()));
  const stop = async () => {
    proc.kill("SIGTERM");
    await Promise.race([exited, sleep(10_000)]);
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitUntil(`Valkey on ${port} answering`, () => ask(port, async (c) => (await c.ping()) === "PONG"), 30_000);
    // The server must be Valkey, not a Redis that answers to the same name.
    const info = await ask(port, (c) => c.info("server"));
    if (!/^server_name:valkey\s*$/m.test(info)) throw new Error(`the server on ${port} is not Valkey:\n${info}`);
    return { url: `redis://127.0.0.1:${port}/0`, version: found.stdout.trim(), stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
