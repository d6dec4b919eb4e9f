// Both sides of a server under test, which runs in a process of its own so that its memory is its
// own and the load generator never shares its event loop. The child says where it listens; asked
// "idle", it answers once its worker has caught up, with its peak resident memory so far.
import { fork } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";

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

export async function startServer(
  name: "steward" | "probot" | "probot-answers",
  env: Record<string, string>,
): Promise<ServerUnderTest> {
  const child = fork(new URL(`./${name}.ts`, import.meta.url), [], {
    // BENCH_NODE_FLAGS: more flags for every server, e.g. --cpu-prof to see where its time goes.
    execArgv: [
      "--conditions=steward-source",
      "--import",
      "tsx",
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

/** The child's side: report `url`, answer "idle" after `idle()`, close on SIGTERM. */
export function serveUnderTest(url: string, idle: () => Promise<unknown>, close: () => Promise<unknown>): void {
  process.send!({ url });
  process.on("message", (m) => {
    if (m === "idle") void idle().then(() => process.send!({ maxRss: process.resourceUsage().maxRSS * 1024 }));
  });
  process.once("SIGTERM", () => void close().finally(() => process.exit(0)));
}
