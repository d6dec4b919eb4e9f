// `npm test`: ESLint, Prettier's format check and the type check side by side (each is one
// single-threaded process, and CI has two cores), each one's output printed whole when it ends;
// then, if all three passed, the whole suite (arguments go to Vitest: `npm test -- test/cli`).
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

const codes = await Promise.all(checks.map(([command, args]) => run(command, args)));
const failed = checks.filter((_, i) => codes[i] !== 0).map(([command]) => command);
if (failed.length > 0) {
  process.stderr.write(`npm test: ${failed.join(", ")} failed; the suite did not run\n`);
  process.exit(1);
}
const suite = spawn("vitest", ["run", ...process.argv.slice(2)], { cwd: root, env, stdio: "inherit" });
suite.on("close", (code) => process.exit(code ?? 1));
