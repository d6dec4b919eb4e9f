// Start time (spawn to ready) and RSS right after start of `steward start` in sandbox mode or of
// `steward sandbox` (the hub alone), compiled (dist/) versus run through tsx:
// node scripts/measure-start.mjs [runs] [start|sandbox]
import { spawn } from "node:child_process";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const runs = Number(process.argv[2] ?? 5);
const command = process.argv[3] ?? "start";
const ready = command === "sandbox" ? /hub listening on/ : /listening on|sandbox mode/;
const root = new URL("..", import.meta.url).pathname;

function once(extraEnv) {
  const dir = mkdtempSync(join(tmpdir(), "steward-measure-"));
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, ["bin/steward.js", command], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        STEWARD_DATA_DIR: dir,
        PORT: "0",
        LOG_LEVEL: "info",
        ...extraEnv,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let started = false;
    const onData = (d) => {
      out += d;
      if (started || !ready.test(out)) return;
      started = true;
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))[1]) / 1024;
      child.kill("SIGTERM");
      child.on("exit", () => {
        rmSync(dir, { recursive: true, force: true });
        resolve({ ms, rss });
      });
      child.stdout.off("data", onData);
      child.stderr.off("data", onData);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => started || reject(new Error(`exited ${code} before listening:\n${out}`)));
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const variants = { compiled: {}, tsx: { STEWARD_FROM_SOURCE: "1" } };
for (const [name, env] of Object.entries(variants)) {
  const results = [];
  for (let i = 0; i < runs; i++) results.push(await once(env));
  console.log(
    `${command} ${name.padEnd(9)} start ${median(results.map((r) => r.ms)).toFixed(0)} ms, RSS ${median(results.map((r) => r.rss)).toFixed(0)} MB (median of ${runs})`,
  );
}
