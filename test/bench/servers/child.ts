// The bench's side of a server under test, which runs in a process of its own so that its memory is
// its own and the load generator never shares its event loop. Every server runs as its users run it:
// plain JavaScript under plain Node, no loader (Steward from its build, dist/, as `npm start` runs
// it). The child (serve.mjs) says where it listens; asked "idle", it answers once its worker has
// caught up, with its peak resident memory so far.
import { spawnSync, fork } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { compiledIsStale } from "../../../bin/build-state.js";

export interface ServerUnderTest {
  /** Where it receives webhooks. */
  url: string;
  /** Waits until its worker has caught up; its peak RSS so far, bytes. */
  idle(): Promise<number>;
  stop(): Promise<void>;
}

/** Node flags `npm start` gives the service, so a benchmarked process runs as production does. */
const START_FLAGS = (
  JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { scripts: { start: string } }
).scripts.start
  .split(/\s+/)
  .filter((a) => a.startsWith("--"));

const root = new URL("../../../", import.meta.url);

let built = false;
/** Builds dist/ (`npm run build`) when it is missing or older than a source, so what runs is what was last edited. */
function ensureBuilt(): void {
  if (built) return;
  if (compiledIsStale(root, new URL("dist/src/app.js", root))) {
    process.stderr.write("bench: dist/ is older than the sources: npm run build\n");
    const result = spawnSync(process.execPath, [fileURLToPath(new URL("scripts/build.mjs", root))], {
      stdio: "inherit",
    });
    if (result.status !== 0) throw new Error("npm run build failed");
  }
  built = true;
}

export async function startServer(
  name: "steward" | "probot" | "probot-answers",
  env: Record<string, string>,
): Promise<ServerUnderTest> {
  // BENCH_FROM_SOURCE=1 (the smoke test): Steward from its sources through tsx, as tests run it,
  // since a test never builds the checkout's dist/; what it measures is then not what users run.
  const fromSource = name === "steward" && process.env.BENCH_FROM_SOURCE === "1";
  if (name === "steward" && !fromSource) ensureBuilt();
  const child = fork(new URL(`./${name}.mjs`, import.meta.url), [], {
    // BENCH_NODE_FLAGS: more flags for every server, e.g. --cpu-prof to see where its time goes.
    execArgv: [
      ...(fromSource ? ["--conditions=steward-source", "--import", "tsx"] : []),
      ...START_FLAGS,
      ...(process.env.BENCH_NODE_FLAGS?.split(" ") ?? []),
    ],
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const [started] = (await Promise.race([
    once(child, "message", { signal: AbortSignal.timeout(120_000) }),
    once(child, "exit").then(([code]) =>
      Promise.reject(new Error(`${name} server exited with ${code} before listening`)),
    ),
  ]).catch((error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  })) as [{ url: string }];
  return {
    url: started.url,
    async idle() {
      const answer = once(child, "message");
      child.send("idle");
      return ((await answer)[0] as { maxRss: number }).maxRss;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      const force = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(force);
    },
  };
}
