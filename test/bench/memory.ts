// Section 4b: RSS over a long run of processed deliveries (leak check), in a child process.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";

export interface MemorySample {
  recorded: number;
  processed: number;
  rss: number;
  heapUsed: number;
  seconds: number;
}

export interface MemoryResult {
  total: number;
  processed: number;
  samples: MemorySample[];
  maxRss: number;
  cpu: { user: number; system: number };
  seconds: number;
  durability: string;
}

export function benchMemory(o: { deliveries: number; durability: "process" | "power" }, log: (s: string) => void): Promise<MemoryResult> {
  const child = fork(fileURLToPath(new URL("./servers/memory-server.ts", import.meta.url)), [], {
    execArgv: ["--import", "tsx", "--expose-gc"],
    env: { ...process.env, BENCH_DELIVERIES: String(o.deliveries), STEWARD_DURABILITY: o.durability },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    let done = false;
    child.on("message", (m: { progress?: MemorySample; done?: Omit<MemoryResult, "durability"> }) => {
      if (m.progress) log(`  ${m.progress.processed} processed: RSS ${(m.progress.rss / 2 ** 20).toFixed(0)} MB, heap ${(m.progress.heapUsed / 2 ** 20).toFixed(0)} MB (${m.progress.seconds.toFixed(0)} s)`);
      if (m.done) {
        done = true;
        resolve({ ...m.done, durability: o.durability });
      }
    });
    child.on("exit", (code) => {
      if (!done) reject(new Error(`memory run exited with ${code} before finishing`));
    });
  });
}
