// `npm run bench`: the full run, printed and published in docs/bench.md. `npm run bench -- --quick`:
// tiny counts, printed only (to see that it works). `-- --console`: the console part alone, printed only.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import {
  benchConsoleOnEveryStore,
  FULL,
  PEER,
  PROBOT,
  runBench,
  runIntake,
  STEWARD,
  STEWARD_POSTGRES,
  STEWARD_REDIS,
  type BenchOptions,
} from "./bench.js";
import { renderConsole, renderIntakeRatios, renderResults } from "./report.js";
import { loadModelTargets, renderLoadModel, runLoadModel } from "./replay.js";

const QUICK: BenchOptions = {
  seconds: 1,
  connections: [1, 10],
  burst: { deliveries: 500, connections: 20 },
  e2eRuns: 3,
  console: { deliveries: 2_000, loads: 3 },
  modelRepos: 20,
};

const quick = process.argv.includes("--quick");
// `--model`: only the load model (docs/scale.md), printed; `--model=N` with a sample of N repositories.
const modelOnly = process.argv.find((a) => a.startsWith("--model"));
if (modelOnly) {
  const r = await runLoadModel(Number(modelOnly.split("=")[1] ?? (quick ? QUICK : FULL).modelRepos), (line) =>
    process.stderr.write(`${line}\n`),
  );
  process.stdout.write(renderLoadModel(r));
  process.stdout.write(
    loadModelTargets(r)
      .map((t) => `- ${t.met ? "met" : "**NOT MET**"}: ${t.text}\n`)
      .join(""),
  );
  process.exit(0);
}
const o = quick ? QUICK : FULL;
// --console: only the console's pages on every store, printed only.
// --postgres-intake / --sqlite-intake: only Steward on that store against the durable peer, intake alone, printed only.
// --intake: only the intake of Steward on SQLite and Redis, the durable peer and in-memory Probot, printed only.
const intakeOnly = process.argv.includes("--postgres-intake")
  ? [STEWARD_POSTGRES, PEER]
  : process.argv.includes("--sqlite-intake")
    ? [STEWARD, PEER]
    : process.argv.includes("--intake")
      ? [STEWARD, STEWARD_REDIS, PEER, PROBOT]
      : undefined;
const git = (...args: string[]) => execFileSync("git", args, { encoding: "utf8" }).trim();
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
const machine = `${cpus().length} x ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GB, Node ${process.version}; load average before ${load()}`;
const started = new Date();
if (intakeOnly) {
  process.stderr.write(`${machine}\n`);
  const { intake, notes } = await runIntake(o, (line) => process.stderr.write(`${line}\n`), intakeOnly);
  process.stdout.write(`${renderIntakeRatios(intake, PEER, notes)}\nload average after ${load()}\n`);
  process.exit(0);
}
if (process.argv.includes("--console")) {
  const rows = await benchConsoleOnEveryStore(o, (line) => process.stderr.write(`${line}\n`));
  process.stdout.write(`${machine}\n\n${renderConsole(rows, o)}load average after ${load()}\n`);
  process.exit(0);
}
const results = await runBench(o, (line) => process.stderr.write(`${line}\n`));
const report = renderResults(results, o);
process.stdout.write(report);
if (!quick) {
  const commit = `${git("rev-parse", "--short", "HEAD")}${git("status", "--porcelain", "--untracked-files=no") ? " with local changes" : ""}`;
  const page = `# Benchmark

\`npm run bench\` checks the speed and memory Steward promises, on one machine in one run, as ratios against what a
Probot user would run instead. It takes about twenty-five minutes, needs Redis at 127.0.0.1:6379 (and PostgreSQL at
127.0.0.1:5432 when this checkout's Steward has its PostgreSQL store), prints the results and rewrites this page.
\`npm run bench -- --quick\` runs it with tiny counts and writes nothing; \`npm run bench -- --intake\` measures only
the intake (Steward on SQLite and Redis, the durable peer, in-memory Probot, with their peak RSS) and
\`npm run bench -- --postgres-intake\` only that of Steward on PostgreSQL and the durable peer, both at the full
levels and printed only. The code is in \`test/bench/\`.

## What is measured

- **Durable intake**: deliveries answered a second and p99 latency at 1, 10 and 50 keep-alive connections (autocannon),
  ${o.seconds} s a level. The payloads are real ones (\`@octokit/webhooks-examples\`, 1-30 KB), signed, each request a new
  delivery id. Each server runs in its own process and they take turns level by level; after each level a server's
  worker catches up before the next.
  - Steward, SQLite store (the default), then Redis, then PostgreSQL when available: a delivery is recorded before it is
    answered 202, and a handler that does nothing runs it.
  - The durable peer, what Probot users are told to build for durability (probot#1537): a Probot 14 app whose handler
    adds each delivery to a BullMQ queue on the same Redis (job id = delivery id) before Probot answers, with a BullMQ
    worker (8 jobs at a time, as Steward's worker) in the same process running a job that does nothing.
  - In-memory Probot: a Probot 14 app answering after a handler that does nothing; an answered delivery is lost if
    the process stops. Reported beside it; no floor on its rate.
- **Burst**: ${o.burst.deliveries} deliveries over ${o.burst.connections} connections to Steward (SQLite), with GitHub's 10 s timeout.
- **End to end**: Steward with its built-in handlers in its own process, the sandbox hub in the bench's: from the hub
  sending \`workflow_run\` completed with a failure to Steward's re-run request reaching it, and from the hub sending
  \`deployment_protection_rule\` to Steward's answer reaching it; ${o.e2eRuns} runs each, one at a time. Then the same
  for a Probot 14 app giving the same answers with the fewest requests a Probot app needs (the failed jobs and their
  logs read, the re-run asked for; the rule approved with one request, without reading the run whose fork Steward
  checks) through Probot's own Octokit, its writes not spaced a second apart, as the sandbox's Steward does not space
  them: what its Octokit's retry and throttling plugins cost a request, which Steward's client shares
  ([decision 0003](decisions/0003-octokit-composed-from-plugins.md)). No floor on the Probot app.
- **Console**: for each store (SQLite, Redis, PostgreSQL when available) ${o.console.deliveries} deliveries seeded through
  the store's own API as the engine writes them (recorded, claimed, each handler's outcome and decision recorded,
  finished: 38% no handler, 54% handled, 3% retrying, 5% dead letters of which a quarter acknowledged as the console
  records it), over 7 days, 15 repositories of the owner's organisation and one of another; then Steward on that store
  against the sandbox hub in its own process, and each console page (the overview, the deliveries list with its
  filters and next page, a dead letter's page, dead letters, every page the navigation lists, a policy) loaded
  ${o.console.loads} times by a signed-in owner over HTTP after a warm-up load. PostgreSQL is analyzed after seeding, as
  its autovacuum would have done by then (this machine's server runs with autovacuum off).
  \`npm run bench -- --console\` runs this part alone (printed only; with \`--quick\`, 2,000 deliveries), and
  \`BENCH_CONSOLE_STORES=SQLite,Redis\` limits it to the stores named.
- **Load model** ([docs/scale.md](scale.md): the model, its assumptions and how it is replayed): the busiest hour of a
  10,000-repository organisation, ${o.modelRepos} repositories of its mix replayed against the sandbox hub in
  compressed time, once with Steward's built-in handlers under GitHub's secondary limits and once with the
  usual Probot app (its configuration read on every event); what each spends is the hub's count of requests, scaled
  to 10,000 repositories. \`npm run bench -- --model\` runs only this.
- **Memory**: each server process's peak RSS over the intake run. Every server process runs as its users run it, the
  same for both sides: plain JavaScript under plain Node with no loader, Steward from its build (\`dist/\`, as
  \`npm start\` runs it, with the Node flags of \`npm start\`; the bench runs \`npm run build\` first when \`dist/\` is
  missing or older than a source), the Probot peers as JavaScript modules. A loader such as tsx is not free, nor the
  same for both (at start, Probot's server holds about 65 MB under plain Node and 95 MB through tsx, Steward's about
  89 MB and 129 MB), so none is measured. Steward's server loads the sandbox stack only for the end-to-end part, as
  \`steward start\` loads it only for the sandbox.

To see where a server's time goes, \`BENCH_NODE_FLAGS=--cpu-prof npm run bench -- --quick\` leaves a CPU profile of
every server process in the working directory.

Floors: intake at least 1.0x the durable peer at every level with p99 no worse; the burst all answered within 10 s;
end-to-end p50 under 10 ms; Steward's peak RSS at most in-memory Probot's; every console page's p50 under 200 ms on
every store. Load model: the busiest hour at most 60% of a 12,500/h installation, no secondary-limit answer, acting
decisions within 60 s at p99, none lost, at least 15x fewer rate-limited requests than the Probot app.

## Latest results

${started.toISOString().slice(0, 16).replace("T", " ")} UTC, commit ${commit}, ${machine}, load average after ${load()}.
One run on a machine shared with other work: read the ratios, not the absolute rates.

${report}`;
  writeFileSync(new URL("../../docs/bench.md", import.meta.url), page);
  process.stderr.write("wrote docs/bench.md\n");
}
