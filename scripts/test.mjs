// `npm test`: ESLint, Prettier's format check and the type check, each one's output printed whole
// when it ends, and the whole suite beside them (arguments go to Vitest: `npm test -- test/cli`).
// The suite starts with the checks rather than after them: it mostly waits on processes, sockets
// and services, and leaves enough of CI's two cores idle for the three single-threaded checks,
// which before took two minutes of their own ahead of it (decision 0020). A failed check stops
// the suite and fails the run.
import { spawn } from "node:child_process";
import { delimiter } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const env = { ...process.env, PATH: `${root}node_modules/.bin${delimiter}${process.env.PATH ?? ""}` };

const checks = [
  ["eslint", ["."]],
  ["prettier", ["--check", "**/*.{ts,mts,cts,js,mjs,cjs}"]],
  ["tsc", ["-p", "tsconfig.json", "--noEmit"]],
];

/** Runs `command`, its output collected; resolves to its exit code (1 when killed by a signal). */
function run(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
    const output = [];
    let done = false;
    const end = (code) => {
      if (done) return;
      done = true;
      process.stdout.write(`> ${command} ${args.join(" ")}\n`);
      process.stdout.write(Buffer.concat(output));
      resolve(code ?? 1);
    };
    child.stdout.on("data", (d) => output.push(d));
    child.stderr.on("data", (d) => output.push(d));
    child.on("error", (error) => {
      output.push(Buffer.from(`${error.message}\n`));
      end(1);
    });
    child.on("close", end);
  });
}

// Its own process group, so a failed check stops the suite's workers and what they started too.
const suite = spawn("vitest", ["run", ...process.argv.slice(2)], { cwd: root, env, stdio: "inherit", detached: true });
const suiteCode = new Promise((resolve) => {
  suite.on("error", () => resolve(1));
  suite.on("close", (code) => resolve(code ?? 1));
});
const stopSuite = () => {
  try {
    process.kill(-suite.pid, "SIGTERM");
  } catch {
    // already gone
  }
};
// Ctrl-C reaches the terminal's process group, which the suite has left: pass it on.
for (const signal of ["SIGINT", "SIGTERM"])
  process.on(signal, () => {
    stopSuite();
    process.exit(1);
  });

const codes = await Promise.all(
  checks.map(async ([command, args]) => {
    const code = await run(command, args);
    if (code !== 0) stopSuite();
    return code;
  }),
);
const failed = checks.filter((_, i) => codes[i] !== 0).map(([command]) => command);
const code = await suiteCode;
if (failed.length > 0) {
  process.stderr.write(`npm test: ${failed.join(", ")} failed (the suite is stopped when a check fails)\n`);
  process.exit(1);
}
process.exit(code);
