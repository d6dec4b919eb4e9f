// Crash and downtime torture: the sandbox hub (in this process) runs CI whose first attempts
// fail transiently, so every run needs real effects from Steward — one re-run request and one
// `steward/rerun` check run on its commit. Steward runs as a child process and is killed with
// SIGKILL at seeded random moments (or kept down for a while), then restarted. The hub's own
// records judge: every delivery recorded and done in Steward's store, every effect exactly once.
import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { seededRandom } from "@steward/sandbox-hub";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { pino } from "pino";

const CHILD = resolve(import.meta.dirname, "fixtures/steward-child.ts");
const ORG = "acme";
const REPO = "torture";
const JOBS = [
  { name: "lint", steps: ["Set up job", "Lint", "Complete job"] },
  { name: "integration-db", steps: ["Set up job", "Install deps", "Test", "Complete job"] },
];
const POLICY = `rerun:
  enabled: true
  delay: 0s
  max_attempts: 3
  rules:
    - jobs: ["integration-*"]
      log: ["ECONNRESET"]
`;

export interface CrashTortureOptions {
  /** Workflow runs to start; each needs one re-run and one check run. */
  runs: number;
  /** SIGKILLs at random moments while the runs arrive. */
  kills: number;
  /** Keep Steward down this long after each kill (the hub keeps delivering meanwhile). */
  downMs?: [number, number];
  /** How long the runs keep arriving. */
  spreadMs: number;
  seed: number;
  dataDir: string;
  /** Give up waiting for the effects after this long. */
  deadlineMs?: number;
  /** Everything the child printed and the store's bytes (for the leak guard). */
  onOutput?(label: string, text: string): void;
  log?(line: string): void;
  /** Events the installation subscribes to (default: those the work needs). */
  events?: string[];
}

export interface CrashTortureResult {
  runs: number;
  kills: number;
  starts: number;
  deliveries: number;
  deliveryAttempts: number;
  failedAttempts: number;
  redeliveries: number;
  lostDeliveries: string[];
  notDone: string[];
  reruns: number;
  checkRuns: number;
  lostEffects: string[];
  duplicatedEffects: string[];
  seconds: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The repository the runs happen in, with a re-run policy; the installation hears only what the work needs. */
export function setUpRetryableRepo(hub: HubHandle, events = ["workflow_run", "check_run", "push"]): void {
  hub.control.createRepo({ owner: ORG, name: REPO, files: { ".github/steward.yml": POLICY } });
  hub.control.installation(ORG)!.events = events;
}

/** A workflow run whose first attempt fails transiently: Steward owes it one re-run and one check run. */
export function startRetryableRun(hub: HubHandle, i: number): { id: number; sha: string } {
  const { control, domains } = hub;
  const branch = `t${i}`;
  control.pushFiles({ owner: ORG, repo: REPO, branch, files: { "work.txt": `${i}\n` } });
  const run = domains.actions.startRun({ owner: ORG, repo: REPO, workflow: "CI", jobs: JOBS, branch });
  domains.actions.scriptAttempt(run.id, 2, "success");
  domains.actions.completeJob({ runId: run.id, job: "lint" });
  domains.actions.failJob({
    runId: run.id,
    job: "integration-db",
    step: "Install deps",
    log: "npm ERR! network read ECONNRESET",
  });
  return { id: run.id, sha: run.head_sha };
}

/** Re-runs per run id and steward/rerun check runs per commit, as the hub recorded them. */
export function tallyRerunEffects(hub: HubHandle): { reruns: Map<number, number>; checks: Map<string, number> } {
  const reruns = new Map<number, number>();
  const checks = new Map<string, number>();
  for (const e of hub.control.effects) {
    const d = e.detail;
    if (e.kind === "actions.rerun-failed-jobs" && d.allowed === true)
      reruns.set(d.run_id as number, (reruns.get(d.run_id as number) ?? 0) + 1);
    if (e.kind === "checks.check_run.created" && d.name === "steward/rerun")
      checks.set(d.head_sha as string, (checks.get(d.head_sha as string) ?? 0) + 1);
  }
  return { reruns, checks };
}

export interface Child {
  proc: ChildProcess;
  /** Where it listens for webhooks (base URL and path). */
  url: Promise<string>;
  exited: Promise<void>;
}

/** The environment of a Steward child process wired to `hub`. */
export function stewardChildEnv(hub: HubHandle, dataDir: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    APP_ID: hub.env.APP_ID,
    PRIVATE_KEY_PATH: hub.env.PRIVATE_KEY_PATH,
    WEBHOOK_SECRET: hub.env.WEBHOOK_SECRET,
    GITHUB_API_URL: hub.env.GITHUB_API_URL,
    ...(dataDir ? { STEWARD_DATA_DIR: dataDir } : {}),
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    ...extra,
  };
}

/** Steward as a child process (`fixture`), configured for the hub plus `env`; its output goes to `onOutput` when it exits. */
export function spawnSteward(
  fixture: string,
  hub: HubHandle,
  env: Record<string, string>,
  label: string,
  onOutput: (label: string, text: string) => void,
): Child {
  const proc = spawn(process.execPath, ["--import", "tsx", fixture], {
    env: stewardChildEnv(hub, env.STEWARD_DATA_DIR ?? "", {
      STEWARD_REDELIVER_INTERVAL: "1s",
      STEWARD_CONCURRENCY: "8",
      STEWARD_SHUTDOWN_TIMEOUT: "5s",
      ...env,
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  // "close", not "exit": at "exit" the last output may still be in the pipes.
  const exited = new Promise<void>((r) =>
    proc.on("close", () => {
      onOutput(label, out);
      r();
    }),
  );
  const url = new Promise<string>((resolveUrl, reject) => {
    const look = () => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\S*)"/.exec(out);
      if (m) resolveUrl(m[1]!);
    };
    proc.stdout!.on("data", look);
    void exited.then(() => reject(new Error(`${label} exited before listening (code ${proc.exitCode})`)));
  });
  url.catch(() => undefined);
  return { proc, url, exited };
}

function startChild(
  hub: HubHandle,
  dataDir: string,
  onOutput: (label: string, text: string) => void,
  n: number,
): Child {
  return spawnSteward(
    CHILD,
    hub,
    { STEWARD_DATA_DIR: dataDir, STEWARD_TORTURE_WRITE_INTERVAL_MS: "0" },
    `steward child #${n}`,
    onOutput,
  );
}

/** Wait until every run has its re-run and check run and nothing happened for a few seconds (late duplicates show), or the deadline. */
export async function awaitRerunEffects(
  hub: HubHandle,
  runs: { id: number; sha: string }[],
  deadlineMs: number,
  log: (line: string) => void,
): Promise<void> {
  const { control } = hub;
  const deadline = Date.now() + deadlineMs;
  let last = "";
  let quietSince = Date.now();
  for (;;) {
    const { reruns, checks } = tallyRerunEffects(hub);
    const complete = runs.every((r) => reruns.has(r.id) && checks.has(r.sha));
    const signature = `${control.effects.length}/${control.deliveries().length}`;
    if (signature !== last) {
      last = signature;
      quietSince = Date.now();
    }
    if (complete && Date.now() - quietSince > 3_000) return;
    if (Date.now() > deadline) {
      log(`deadline reached: ${runs.filter((r) => !reruns.has(r.id)).length} runs without a re-run`);
      return;
    }
    await sleep(200);
  }
}

export async function runCrashTorture(opts: CrashTortureOptions): Promise<CrashTortureResult> {
  const started = Date.now();
  const random = seededRandom(opts.seed);
  const log = opts.log ?? (() => undefined);
  const onOutput = opts.onOutput ?? (() => undefined);
  const hub = await createHub({ randomSeed: opts.seed });
  const { control } = hub;
  let child: Child | undefined;
  let starts = 0;
  let kills = 0;
  try {
    // Subscribed to the events the work needs (the hub sends ~25 deliveries per run otherwise).
    setUpRetryableRepo(hub, opts.events);

    const up = async () => {
      child = startChild(hub, opts.dataDir, onOutput, ++starts);
      control.setWebhookUrl(await child.url);
    };
    await up();

    // The runs arrive over `spreadMs`; the kills land at seeded moments inside that window.
    const killAt = Array.from({ length: opts.kills }, () => random() * opts.spreadMs).sort((a, b) => a - b);
    const [downMin, downMax] = opts.downMs ?? [50, 400];
    const killer = (async () => {
      const t0 = Date.now();
      for (const at of killAt) {
        await sleep(Math.max(0, at - (Date.now() - t0)));
        const victim = child!;
        victim.proc.kill("SIGKILL");
        await victim.exited;
        kills++;
        await sleep(downMin + random() * (downMax - downMin));
        await up();
      }
    })();

    const runs: { id: number; sha: string }[] = [];
    const batch = Math.max(1, Math.ceil(opts.runs / Math.max(1, opts.spreadMs / 20)));
    const t0 = Date.now();
    for (let i = 0; i < opts.runs; i++) {
      runs.push(startRetryableRun(hub, i));
      if ((i + 1) % batch === 0) await sleep(Math.max(1, ((i + 1) / opts.runs) * opts.spreadMs - (Date.now() - t0)));
    }
    await killer;
    log(`runs started: ${runs.length}, kills: ${kills}`);

    // Wait for every effect, then a quiet period long enough for late duplicates to show.
    await awaitRerunEffects(hub, runs, opts.deadlineMs ?? 180_000, log);
    await control.settled();

    // Graceful stop, then read what Steward recorded.
    child!.proc.kill("SIGTERM");
    await child!.exited;
    child = undefined;
    const store = openSqliteStore(opts.dataDir, { logger: pino({ level: "silent" }) });
    const attempts = control.deliveries();
    const guids = [...new Set(attempts.map((d) => d.guid))];
    const lostDeliveries: string[] = [];
    const notDone: string[] = [];
    const outcomesOf = new Map<number, string[]>();
    try {
      for (const d of attempts) {
        if (d.event !== "workflow_run" || d.action !== "completed") continue;
        const runId = (d.payload.workflow_run as { id: number }).id;
        const found = await store.deliveries.getDelivery(d.guid);
        const text = (found?.outcomes ?? [])
          .filter((o) => o.handler === "rerun")
          .map((o) => `${o.status}: ${o.detail ?? ""}`);
        outcomesOf.set(runId, [...(outcomesOf.get(runId) ?? []), ...text]);
      }
      for (const guid of guids) {
        const found = await store.deliveries.getDelivery(guid);
        if (!found) {
          // Say enough to diagnose: the event and how each attempt went.
          const tries = attempts.filter((d) => d.guid === guid);
          lostDeliveries.push(
            `${guid} ${tries[0]?.event}.${tries[0]?.action ?? ""} attempts: ${tries.map((d) => `${d.status_code}${d.redelivery ? " (redelivery)" : ""}`).join(", ")}`,
          );
        } else if (found.delivery.status !== "done")
          notDone.push(`${guid} ${found.delivery.status}: ${found.delivery.lastError ?? ""}`);
      }
    } finally {
      store.close();
    }

    const { reruns, checks } = tallyRerunEffects(hub);
    const lostEffects: string[] = [];
    const duplicatedEffects: string[] = [];
    for (const r of runs) {
      const n = reruns.get(r.id) ?? 0;
      if (n === 0)
        lostEffects.push(
          `re-run of run ${r.id} (rerun outcomes: ${[...new Set(outcomesOf.get(r.id) ?? [])].join(" | ")})`,
        );
      if (n > 1) duplicatedEffects.push(`re-run of run ${r.id} x${n}`);
      const c = checks.get(r.sha) ?? 0;
      if (c === 0) lostEffects.push(`check run on ${r.sha}`);
      if (c > 1) duplicatedEffects.push(`check run on ${r.sha} x${c}`);
    }
    return {
      runs: runs.length,
      kills,
      starts,
      deliveries: guids.length,
      deliveryAttempts: attempts.length,
      failedAttempts: attempts.filter((d) => d.status_code < 200 || d.status_code >= 300).length,
      redeliveries: attempts.filter((d) => d.redelivery).length,
      lostDeliveries,
      notDone,
      reruns: [...reruns.values()].reduce((a, b) => a + b, 0),
      checkRuns: [...checks.values()].reduce((a, b) => a + b, 0),
      lostEffects,
      duplicatedEffects,
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    if (child) {
      child.proc.kill("SIGKILL");
      await child.exited;
    }
    control.setWebhookUrl(undefined);
    await hub.close();
  }
}
