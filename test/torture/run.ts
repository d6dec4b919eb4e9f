// `npm run torture -- --deliveries 5000 --kills 20 --fuzz 100000 --seed 7`: the larger,
// configurable torture run. Prints each figure the README "Reliability" section quotes and
// exits non-zero when anything was lost or done twice.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { validatePolicyText } from "../../src/policy/validate.js";
import { builtinHandlers } from "../../handlers/index.js";
import { runCrashTorture } from "./crash-harness.js";
import { fuzzIntake, oversized, slowLoris, startIntake } from "./intake-fuzz.js";
import { brokenCorpus } from "./policy-corpus.js";

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const raw = i >= 0 ? process.argv[i + 1] : undefined;
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number`);
  return n;
}

const runs = option("deliveries", 500);
const kills = option("kills", 10);
const fuzzRuns = option("fuzz", 100_000);
const seed = option("seed", 7);
const log = (line: string) => process.stdout.write(`${line}\n`);
let failed = false;

// Crash: `--deliveries` workflow runs (each ~15 deliveries and two effects), `--kills` SIGKILLs.
{
  const dir = await mkdtemp(join(tmpdir(), "steward-torture-crash-"));
  const r = await runCrashTorture({
    runs,
    kills,
    spreadMs: Math.max(5_000, runs * 40),
    seed,
    dataDir: dir,
    deadlineMs: 600_000,
    log,
  });
  await rm(dir, { recursive: true, force: true });
  log(
    `crash: runs=${r.runs} deliveries=${r.deliveries} attempts=${r.deliveryAttempts} kills=${r.kills} failed-attempts=${r.failedAttempts} redeliveries=${r.redeliveries} reruns=${r.reruns} check-runs=${r.checkRuns} lost-deliveries=${r.lostDeliveries.length} not-done=${r.notDone.length} lost-effects=${r.lostEffects.length} duplicated=${r.duplicatedEffects.length} seconds=${r.seconds}`,
  );
  for (const e of [...r.lostDeliveries, ...r.lostEffects, ...r.duplicatedEffects, ...r.notDone].slice(0, 20))
    log(`  ${e}`);
  failed ||= r.lostDeliveries.length + r.notDone.length + r.lostEffects.length + r.duplicatedEffects.length > 0;
}

// Downtime: Steward down for 5 s while the hub delivers; the sweeper brings every one back.
{
  const dir = await mkdtemp(join(tmpdir(), "steward-torture-down-"));
  const r = await runCrashTorture({
    runs: Math.max(20, Math.floor(runs / 10)),
    kills: 1,
    downMs: [5_000, 5_000],
    spreadMs: 3_000,
    seed: seed + 1,
    dataDir: dir,
    deadlineMs: 300_000,
    log,
  });
  await rm(dir, { recursive: true, force: true });
  log(
    `downtime: deliveries=${r.deliveries} failed-attempts=${r.failedAttempts} redeliveries=${r.redeliveries} lost-deliveries=${r.lostDeliveries.length} lost-effects=${r.lostEffects.length} duplicated=${r.duplicatedEffects.length}`,
  );
  for (const e of [...r.lostDeliveries, ...r.lostEffects, ...r.duplicatedEffects, ...r.notDone].slice(0, 20))
    log(`  ${e}`);
  failed ||=
    r.lostDeliveries.length + r.notDone.length + r.lostEffects.length + r.duplicatedEffects.length > 0 ||
    r.redeliveries === 0;
}

// Hostile intake.
{
  const intake = await startIntake({ maxBodyBytes: 1024 * 1024, headersTimeoutMs: 300, requestTimeoutMs: 600 });
  try {
    const r = await fuzzIntake(intake, { runs: fuzzRuns, seed });
    const loris = await slowLoris(intake.url, { gapMs: 50, maxBytes: 400 });
    const big = await oversized(intake.url, 256 * 1024 * 1024, intake.secret);
    log(
      `fuzz: requests=${r.requests} by-status=${JSON.stringify(r.byStatus)} undocumented=${r.undocumented.length} accepted=${r.accepted} stored=${r.storedAccepted} rss-mb=${r.rssBeforeMb}->${r.rssAfterMb} slow-loris-cut=${loris.cut} oversized-status=${big.status}`,
    );
    failed ||= r.undocumented.length > 0 || r.storedAccepted !== r.accepted || !loris.cut;
  } finally {
    await intake.close();
  }
}

// Bad policy files.
{
  let problems = 0;
  let missed = 0;
  let threw = 0;
  const corpus = brokenCorpus();
  process.env.STEWARD_SECRET_NPM_TOKEN ??= "corpus-npm-token-value";
  process.env.STEWARD_SECRET_DEPLOY_KEY ??= "corpus-deploy-key-value";
  for (const f of corpus) {
    try {
      const r = validatePolicyText(f.text, {
        file: f.document ?? ".github/steward.yml",
        handlers: builtinHandlers,
        ...(f.document ? { document: f.document } : {}),
      });
      problems += r.problems.length;
      if (r.problems.length === 0 || r.problems.some((p) => p.line < 1 || p.column < 1)) missed++;
    } catch {
      threw++;
    }
  }
  log(`policy: files=${corpus.length} problems=${problems} without-problem=${missed} threw=${threw}`);
  failed ||= missed + threw > 0;
}

log(failed ? "RESULT: FAILED" : "RESULT: lost 0, duplicated 0");
process.exit(failed ? 1 : 0);
