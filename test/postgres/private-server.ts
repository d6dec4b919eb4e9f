// A PostgreSQL server of the test's own (initdb into a temporary directory, a free loopback
// port, trust authentication), for tests that restart or stop the database: the machine's shared
// server is used by other tests and never touched. Run as the `postgres` OS user when the test
// runs as root (PostgreSQL refuses to run as root).
import { execFile } from "node:child_process";
import { chown, mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

async function binDir(): Promise<string | undefined> {
  try {
    const versions = (await readdir("/usr/lib/postgresql")).sort((a, b) => Number(b) - Number(a));
    return versions[0] ? `/usr/lib/postgresql/${versions[0]}/bin` : undefined;
  } catch {
    return undefined;
  }
}

const bin = await binDir();
const asRoot = userInfo().uid === 0;

/** Why no private server can be started here, or undefined when one can. */
export const privateServerUnavailable: string | undefined = bin
  ? undefined
  : "no PostgreSQL binaries under /usr/lib/postgresql";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

export interface PrivateServer {
  url: string;
  /** pg_ctl restart -m fast: connections are closed, the server stops cleanly and starts again. */
  restart(): Promise<void>;
  /** pg_ctl stop -m immediate, then start: the server quits without a checkpoint, as in a crash, and recovers from its WAL. */
  crash(): Promise<void>;
  stop(): Promise<void>;
}

async function pg(tool: string, args: string[]): Promise<void> {
  const command = join(bin!, tool);
  if (asRoot) await run("runuser", ["-u", "postgres", "--", command, ...args], { timeout: 120_000 });
  else await run(command, args, { timeout: 120_000 });
}

/** `settings`: more `-c name=value` server settings. */
export async function startPrivateServer(settings: string[] = []): Promise<PrivateServer> {
  if (!bin) throw new Error(privateServerUnavailable);
  const dir = await mkdtemp(join(tmpdir(), "steward-pg-"));
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = join(dir, "data");
  const port = await freePort();
  await pg("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const options = [`-p ${port} -c listen_addresses=127.0.0.1 -k ${dir}`, ...settings.map((v) => `-c ${v}`)].join(" ");
  const ctl = (action: string[]) =>
    pg("pg_ctl", ["-D", data, "-l", join(dir, "log"), "-w", "-t", "120", "-o", options, ...action]);
  await ctl(["start"]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: () => ctl(["restart", "-m", "fast"]),
    async crash() {
      await ctl(["stop", "-m", "immediate"]);
      await ctl(["start"]);
    },
    async stop() {
      await ctl(["stop", "-m", "immediate"]).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
