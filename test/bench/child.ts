// A benchmarked server in its own process, so the load generator never shares its event loop.
// The child prints `PORT=n` when listening and answers IPC requests (usage, drain).
import { fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { HEAP_FLAGS } from "../../bin/heap-flags.js";

export interface Usage {
  /** Current resident set, bytes. */
  rss: number;
  /** Peak resident set over the process's life, bytes. */
  maxRss: number;
  /** CPU time, microseconds. */
  cpu: { user: number; system: number };
  /** Page faults served without I/O over the process's life: each is a fresh page of memory. */
  minorFaults?: number;
  /** Deliveries the handler ran (Steward only). */
  processed?: number;
  /** Deliveries waiting or running (Steward only). */
  depth?: number;
}

export interface ServerChild {
  port: number;
  /** The child's process id (per-thread CPU in /proc while experimenting). */
  pid: number;
  /** What the child printed up to its `PORT=` line (e.g. the hub's `WORLD=` line). */
  banner: string;
  url: string;
  /** Ask the child a question over IPC and wait for its answer. */
  ask<T = Usage>(message: string | Record<string, unknown>, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

export async function startChild(file: string, env: Record<string, string>, webhookPath: string): Promise<ServerChild> {
  const child: ChildProcess = fork(file, [], {
    // Compiled servers (.mjs over dist/) run on plain node, as production does; TypeScript ones through tsx.
    // Steward's server gets the heap settings production runs with (bin/heap-flags.js).
    execArgv: [...(file.endsWith(".ts") ? ["--import", "tsx"] : []), ...(file.endsWith("steward-server.mjs") ? HEAP_FLAGS : []), ...(process.env.BENCH_CHILD_ARGS ? process.env.BENCH_CHILD_ARGS.split(" ") : [])],
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  let out = "";
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const m = /PORT=(\d+)/.exec(out);
      if (m) {
        child.stdout!.off("data", onData);
        child.stdout!.resume();
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`${file} exited with ${code} before listening`)));
  });
  let pending: { resolve(v: unknown): void; reject(e: Error): void } | undefined;
  child.on("message", (m) => {
    const p = pending;
    pending = undefined;
    p?.resolve(m);
  });
  return {
    port,
    pid: child.pid!,
    banner: out,
    url: `http://127.0.0.1:${port}${webhookPath}`,
    ask<T>(message: string | Record<string, unknown>, timeoutMs = 600_000) {
      if (pending) return Promise.reject(new Error("one question at a time"));
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending = undefined;
          reject(new Error(`no answer to ${JSON.stringify(message)}`));
        }, timeoutMs);
        pending = {
          resolve: (v) => {
            clearTimeout(timer);
            resolve(v as T);
          },
          reject,
        };
        child.send(message);
      });
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
