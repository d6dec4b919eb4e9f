// `steward` as a child process, for tests of what an operator sees: its output, its exit, and
// what it does with signals.
import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";

export const BIN = resolve(__dirname, "../../bin/steward.js");

/**
 * The environment of `steward start` as a real app of the hub: its app id, its key written to a
 * file under `dir` (as an operator keeps it), the webhook secret, and a data directory under `dir`.
 */
export async function realAppEnv(
  hub: { url: string; env: { APP_ID: string; PRIVATE_KEY: string } },
  dir: string,
  secret: string,
): Promise<Record<string, string>> {
  const keyPath = join(dir, "app.pem");
  await writeFile(keyPath, hub.env.PRIVATE_KEY);
  return {
    APP_ID: hub.env.APP_ID,
    PRIVATE_KEY_PATH: keyPath,
    WEBHOOK_SECRET: secret,
    GITHUB_API_URL: hub.url,
    PORT: "0",
    HOST: "127.0.0.1",
    STEWARD_DATA_DIR: join(dir, "data"),
  };
}

/** `bin`: another copy of Steward's bin (an installed package's); `cwd`: where it runs. */
export function startChild(
  env: Record<string, string>,
  args: string[] = ["start"],
  opts: { bin?: string; cwd?: string } = {},
) {
  const proc = spawn(process.execPath, [opts.bin ?? BIN, ...args], {
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout!.on("data", (d) => (stdout += d.toString()));
  proc.stderr!.on("data", (d) => (stderr += d.toString()));
  // "close", not "exit": at "exit" the last output (its "shut down" line) may still be in the pipes.
  const exited = new Promise<number | null>((resolve) => proc.on("close", (code) => resolve(code)));
  const listening = new Promise<string>((resolve, reject) => {
    proc.stdout!.on("data", () => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (m) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`exited ${code} before listening: ${stderr}${stdout}`)));
  });
  listening.catch(() => undefined);
  return { proc, exited, listening, out: () => stdout + stderr };
}
