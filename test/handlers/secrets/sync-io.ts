// `steward sync` run in-process as a person would run it against the sandbox hub: the hub's app
// and a data directory in its environment, what it prints kept for the test to read.
import type { CommandIo as Io } from "../../../src/cli/io.js";
import type { HubHandle } from "../../../src/sandbox/hub.js";

export type CapturedIo = Io & { stdout: string; stderr: string };

/** The sync command's Io for `hub`'s app and `dataDir`; `env` adds or overrides variables. */
export function syncIo(hub: HubHandle, dataDir: string, env: NodeJS.ProcessEnv): CapturedIo {
  const io: CapturedIo = {
    stdout: "",
    stderr: "",
    env: {
      APP_ID: hub.env.APP_ID,
      PRIVATE_KEY_PATH: hub.env.PRIVATE_KEY_PATH,
      WEBHOOK_SECRET: hub.env.WEBHOOK_SECRET,
      GITHUB_API_URL: hub.url,
      STEWARD_DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
      ...env,
    },
    out: (text) => void (io.stdout += text),
    err: (text) => void (io.stderr += text),
  };
  return io;
}
