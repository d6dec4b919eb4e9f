// Renders a bench run as Markdown (stdout and RESULTS.md) and judges it against the issue's
// targets. Pure: results in, text out.
import type { IntakeResult, IntakeRow } from "./intake.js";
import { median } from "./stats.js";
import type { E2eResult } from "./e2e.js";
import type { CostRow } from "./api-cost.js";
import type { TokenRow } from "./tokens.js";
import type { MemoryResult } from "./memory.js";
import type { ProfileSummary } from "./profile.js";
import type { BurstResult } from "./burst.js";

export interface Machine {
  date: string;
  node: string;
  cpu: string;
  cores: number;
  loadBefore: number[];
  loadAfter: number[];
  mode: "quick" | "full";
  seconds: number;
  /** Set when this run measured only some sections and kept the others from an earlier run. */
  kept?: { sections: string[]; from: string };
  /** Kept sections measured at other times: section -> the date of the run that measured it. */
  keptFrom?: Record<string, string>;
  /** Steward settings the run took from its environment (servers/bench-steward.mjs), when any. */
  settings?: Record<string, string>;
}

/** "NAME=value, NAME=value": settings as the shell gives them. */
export function settingsText(settings: Record<string, string>): string {
  return Object.entries(settings)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

/** " Steward ran with NAME=value, ... from the environment." or "" when it ran with the bench's own. */
function settingsNote(m: Machine): string {
  return Object.keys(m.settings ?? {}).length === 0 ? "" : ` Steward ran with ${settingsText(m.settings!)} from the environment.`;
}

import { consoleTable, type ConsoleBenchResult } from "./console.js";

export interface BenchResults {
  machine: Machine;
  intake?: IntakeResult;
  burst?: BurstResult;
  e2e?: E2eResult;
  cost?: CostRow[];
  memory?: MemoryResult;
  profile?: ProfileSummary;
  tokens?: TokenRow[];
  console?: ConsoleBenchResult;
}

export interface TargetVerdict {
  target: string;
  met: boolean;
  measured: string;
}

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const row = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
/** A Markdown table: the header, its rule, one row per entry of `rows`. */
/** A section's heading with the blank lines around it. */
const heading = (title: string) => ["", title, ""];
const table = (header: string[], rows: (string | number)[][]) => [row(header), row(header.map(() => "---")), ...rows.map(row)].join("\n");
const pct = (share: number) => `${(share * 100).toFixed(1)}%`;

/** Steward's rate over Probot's at a level: the median of the rounds' paired ratios, or the one ratio. */
function ratioOf(s: IntakeRow, p: IntakeRow): number {
  return s.ratios?.length ? median(s.ratios) : s.rps / p.rps;
}

/** "0.86x", with the rounds' range when there were several: "0.86x (0.71-0.90)". */
function ratioText(s: IntakeRow, p: IntakeRow): string {
  const spread = s.ratios && s.ratios.length > 1 ? ` (${fmt(Math.min(...s.ratios), 2)}-${fmt(Math.max(...s.ratios), 2)})` : "";
  return `${fmt(ratioOf(s, p), 2)}x${spread}`;
}

function intakeTable(r: IntakeResult): string {
  const levels = [...new Set(r.rows.map((x) => x.connections))];
  const lines: (string | number)[][] = [];
  for (const c of levels) {
    const s = r.rows.find((x) => x.server === "steward" && x.connections === c);
    const p = r.rows.find((x) => x.server === "probot" && x.connections === c);
    if (!s || !p) continue;
    const cpu = s.cpuMsPerDelivery !== undefined && p.cpuMsPerDelivery !== undefined ? `${fmt(s.cpuMsPerDelivery, 2)} vs ${fmt(p.cpuMsPerDelivery, 2)}` : "n/a";
    lines.push([c, fmt(s.rps), s.p50, s.p99, s.max, fmt(p.rps), p.p50, p.p99, p.max, ratioText(s, p), cpu]);
  }
  const header = ["Concurrency", "Steward deliveries/s", "p50 ms", "p99 ms", "max ms", "Probot deliveries/s", "p50 ms", "p99 ms", "max ms", "Steward/Probot", "CPU ms/delivery, Steward vs Probot"];
  const failures = r.rows.filter((x) => x.non2xx + x.errors > 0).map((x) => `${x.server} c=${x.connections}: ${x.non2xx} non-2xx, ${x.errors} errors`);
  return table(header, lines) + (failures.length ? `\n\nFailed requests: ${failures.join("; ")}.` : "\n\nEvery request was answered 2xx.");
}

function usageTable(r: IntakeResult): string {
  return table(
    ["Server", "Peak RSS", "CPU s at top concurrency", "Cores busy", "Accepted", "Processed", "Backlog drain after top level"],
    r.usage.map((u) => [u.server, mb(u.peakRss), fmt(u.cpuAtTop, 1), fmt(u.cpuAtTop / u.topSeconds, 2), u.accepted, u.processed ?? "n/a (handled inline)", u.drainSeconds === undefined ? "n/a" : `${fmt(u.drainSeconds, 1)} s`]),
  );
}

function e2eTable(r: E2eResult): string {
  return table(
    ["Flow", "Hub in", "API answers held back, ms", "Logs read ahead", "Rate /s", "Answered", "p50 ms", "p99 ms", "max ms", "First API call about the run, p50 ms", "API calls about the run before the answer"],
    r.rows.map((x) => [x.flow, x.hub ?? "Steward's process", x.apiDelayMs ?? 0, x.flow.endsWith("re-run") ? (x.readAhead ? "yes" : "no") : "n/a", x.rate, `${x.answered}/${x.sent}`, x.latency.p50, x.latency.p99, x.latency.max, x.firstCall.p50, x.callsBeforeAnswer]),
  );
}

/** Rows measured before reads were split (results.json of older runs): every read cost rate limit. */
const rateLimitedReads = (x: CostRow) => x.rateLimitedReads ?? x.reads;

function costTable(rows: CostRow[]): string {
  const lines: (string | number)[][] = [];
  for (const s of rows.filter((x) => x.approach === "steward")) {
    const same = (approach: CostRow["approach"]) => rows.find((x) => x.approach === approach && x.repositories === s.repositories && x.run === s.run);
    const n = same("naive");
    const shared = same("steward shared");
    const r = rateLimitedReads(s);
    lines.push([
      s.repositories, s.run, r, s.notModified ?? 0, s.fewWrites ? `${s.writes} (${s.fewWrites.join("; ")})` : s.writes, fmt(s.writes / s.repositories, 2),
      shared ? (shared.fewWrites && shared.writes <= 2 ? `${shared.writes} (${shared.fewWrites.join("; ")})` : shared.writes) : "", shared ? fmt(shared.writes / shared.repositories, 2) : "",
      n ? rateLimitedReads(n) : "", n?.writes ?? "", fmt(r / s.repositories, 2),
    ]);
  }
  return table(
    ["Repositories", "Run", "Steward reads: rate-limited", "Steward reads: 304 (free)", "Steward writes", "Writes/repo", "Shared (`share: org`) writes", "Shared writes/repo", "Naive reads", "Naive writes", "Steward rate-limited reads/repo"],
    lines,
  );
}

function memoryTable(m: MemoryResult): string {
  return table(["Processed", "RSS after GC", "Heap used after GC", "Elapsed s"], m.samples.map((s) => [s.processed, mb(s.rss), mb(s.heapUsed), fmt(s.seconds)]));
}

function profileTables(p: ProfileSummary): string {
  const t = (items: { name: string; share: number }[], head: string) => table([head, "Share of busy time"], items.map((x) => [`\`${x.name}\``, pct(x.share)]));
  const busy = p.busyShare === undefined ? "" : `The main thread was in JavaScript or a native call ${pct(p.busyShare)} of the profiled window (the rest idle in the event loop: waiting for requests, commits or the checkpoint thread).\n\n`;
  return `${busy}${t(p.areas, "Area (native calls charged to their caller)")}\n\n${t(p.functions, "Function")}`;
}

/** Steward's memory growth over the second half of the long run, as a share of the midpoint RSS. */
export function memoryGrowth(m: MemoryResult): number {
  if (m.samples.length < 2) return NaN;
  const mid = m.samples[Math.floor((m.samples.length - 1) / 2)]!;
  const last = m.samples.at(-1)!;
  return (last.rss - mid.rss) / mid.rss;
}

export function judgeTargets(r: BenchResults): TargetVerdict[] {
  const out: TargetVerdict[] = [];
  if (r.intake) {
    // Issue 17: at every level up to 50 connections, at least Probot's rate and a p99 no worse.
    for (const c of [1, 10, 50]) {
      const s = r.intake.rows.find((x) => x.server === "steward" && x.connections === c);
      const p = r.intake.rows.find((x) => x.server === "probot" && x.connections === c);
      if (!s || !p) continue;
      out.push({ target: `Intake at concurrency ${c}: at least 1.0x Probot's throughput (aim 1.5x)`, met: ratioOf(s, p) >= 1, measured: `${ratioText(s, p)} (${fmt(s.rps)} vs ${fmt(p.rps)} deliveries/s)` });
      out.push({ target: `Intake at concurrency ${c}: p99 no worse than Probot's`, met: s.p99 <= p.p99, measured: `${s.p99} ms vs ${p.p99} ms` });
    }
    const steward = r.intake.usage.find((u) => u.server === "steward");
    const probot = r.intake.usage.find((u) => u.server === "probot");
    if (steward && probot) out.push({ target: "Peak RSS during the intake levels: at most Probot's in the same run", met: steward.peakRss <= probot.peakRss, measured: `${mb(steward.peakRss)} vs ${mb(probot.peakRss)}` });
  }
  if (r.burst) {
    const s = r.burst.rows.find((x) => x.server === "steward");
    const p = r.burst.rows.find((x) => x.server === "probot");
    if (s) {
      const ok = s.requests - s.non2xx;
      out.push({
        target: `Burst of ${r.burst.deliveries} deliveries over ${r.burst.connections} connections: Steward answers every one within ${r.burst.timeoutSeconds} s`,
        met: ok === s.offered && s.timeouts === 0 && s.errors === 0 && s.max < r.burst.timeoutSeconds * 1000,
        measured: `${ok}/${s.offered} accepted, ${s.timeouts} timeouts, max ${s.max} ms; backlog drained ${fmt(s.drainSeconds ?? NaN, 1)} s after the last answer` +
          (p ? ` (Probot with a ${r.burst.apiDelayMs} ms API call inline: ${p.timeouts} timeouts, ${p.requests - p.non2xx} answered 2xx, max ${p.max} ms)` : ""),
      });
    }
  }
  if (r.e2e) {
    // The target is the sandbox's (answers in-process); a row with the API held back shows the round trips.
    // The targets are the rows whose hub is elsewhere, as GitHub is (a run's rows before 2026-11-29 had it in Steward's process only).
    const apart = r.e2e.rows.some((row) => row.hub === "own process");
    for (const x of r.e2e.rows.filter((row) => !row.apiDelayMs && (!apart || row.hub === "own process"))) out.push({ target: `End-to-end p50 under 10 ms: ${x.flow}`, met: x.latency.p50 < 10 && x.answered === x.sent, measured: `${x.latency.p50} ms (${x.answered}/${x.sent} answered)` });
  }
  if (r.cost) {
    // Reads answered 304 cost no rate limit (on GitHub as on the hub); the target counts the others.
    // The steady state (nothing changed since the last sync) and the same after a token renewal.
    const judged: Partial<Record<CostRow["run"], string>> = { "no change again": "", "no change, new token": " right after an installation-token renewal" };
    for (const x of r.cost.filter((c) => c.approach === "steward" && judged[c.run] !== undefined)) {
      const reads = rateLimitedReads(x);
      out.push({
        target: `No-change sync of ${x.repositories} repositories${judged[x.run]}: at most one rate-limited read per repository, zero writes`,
        met: reads <= x.repositories && x.writes === 0,
        measured: `${reads} rate-limited reads (${fmt(reads / x.repositories, 2)}/repository) and ${x.notModified ?? 0} answered 304, ${x.writes} writes`,
      });
    }
    for (const x of r.cost.filter((c) => c.approach === "steward" && c.run === "first")) {
      const shared = r.cost.find((c) => c.approach === "steward shared" && c.run === "first" && c.repositories === x.repositories);
      if (!shared) continue;
      out.push({
        target: `First sync of ${x.repositories} repositories: fewer writes when the policy shares values through the organisation (\`share: org\`)`,
        met: shared.writes < x.writes,
        measured: `${fmt(x.writes / x.repositories, 2)} writes/repository before, ${fmt(shared.writes / shared.repositories, 2)} after (${x.writes} -> ${shared.writes})`,
      });
    }
  }
  if (r.memory) {
    const growth = memoryGrowth(r.memory);
    out.push({ target: `RSS flat over ${r.memory.processed} processed deliveries (under 10% growth over the second half)`, met: growth < 0.1, measured: `${pct(growth)} (${mb(r.memory.samples[Math.floor((r.memory.samples.length - 1) / 2)]!.rss)} -> ${mb(r.memory.samples.at(-1)!.rss)})` });
  }
  if (r.console && r.console.rows.length) {
    const worst = r.console.rows.reduce((a, b) => (b.max > a.max ? b : a));
    out.push({ target: `Every console page under 200 ms with ${r.console.deliveries} deliveries (both stores)`, met: worst.max < 200 && r.console.skipped.length === 0, measured: `slowest: ${worst.page} on ${worst.store}, max ${fmt(worst.max, 1)} ms` });
  }
  return out;
}

/** Which kept sections come from which earlier run, one sentence per run. */
function keptNote(m: Machine): string {
  if (!m.kept) return "";
  const byDate = new Map<string, string[]>();
  for (const section of m.kept.sections) {
    const date = m.keptFrom?.[section] ?? m.kept.from;
    byDate.set(date, [...(byDate.get(date) ?? []), section]);
  }
  return [...byDate].map(([date, sections]) => ` Sections ${sections.join(", ")} are from the run of ${date} on the same machine.`).join("");
}

export function renderReport(r: BenchResults, notes: string): string {
  const m = r.machine;
  const parts: string[] = [
    `# Steward benchmarks`,
    "",
    `Run: ${m.date}, ${m.mode} mode, ${fmt(m.seconds)} s. Node ${m.node}, ${m.cpu}, ${m.cores} cores. ` +
      `Load average before ${m.loadBefore.map((x) => x.toFixed(2)).join(" / ")}, after ${m.loadAfter.map((x) => x.toFixed(2)).join(" / ")} (1/5/15 min).` +
      settingsNote(m) +
      keptNote(m),
    "",
    "Regenerate with `npm run bench` (a few minutes; writes this file) or `npm run bench -- --quick` (under a minute, prints only).",
  ];
  const verdicts = judgeTargets(r);
  if (verdicts.length) {
    parts.push(...heading("## Targets"), table(["Target", "Met", "Measured"], verdicts.map((v) => [v.target, v.met ? "yes" : "**no**", v.measured])));
  }
  if (r.intake) {
    const i = r.intake;
    parts.push(
      ...heading("## 1. Intake: Steward against Probot"),
      `Signed deliveries over loopback from autocannon (library), ${(i.rounds ?? 1) > 1 ? `${i.rounds} rounds of ${i.seconds} s per level (each round Probot, then Steward; rates and latencies are the rounds' medians, max the largest, and the ratio is the median of the rounds' own ratios, their range in brackets)` : `${i.seconds} s per level`} after a warm-up, ${i.payloads.count} real payloads from ` +
        `@octokit/webhooks-examples (${i.payloads.events.join(", ")}; ${fmt(i.payloads.minBytes / 1024, 1)}-${fmt(i.payloads.maxBytes / 1024, 1)} KB), a fresh ` +
        `X-GitHub-Delivery on every request (${i.deliveryIds === "time-based" ? "time-based version-1 GUIDs, the form GitHub sends: test/bench/delivery-ids.ts" : "random version-4 GUIDs"}). Each server runs in its own process; both run side by side and take turns at each level (Probot, then Steward), so the two rates a ratio compares are measured one right after the other. Steward records every delivery durably in SQLite ` +
        `(durability \`${i.durability}\`: ${i.durability === "power" ? "synchronous=FULL, survives power loss" : "WAL with synchronous=NORMAL, survives a crash of the process"}) and then answers 202; ` +
        (i.handlers === "noop" || i.handlers === undefined
          ? "a no-op handler runs on the worker pool (`--noop`: no API). "
          : "its built-in handlers (rerun, deployments, steward/config checks, secrets) run on the worker pool against the sandbox hub in its own process " +
            "(demo world, payloads moved onto its installation and `acme/web`, no policy file: the token mints and policy reads are real, the policy is empty). ") +
        "Probot (14, `createNodeMiddleware`) verifies and runs a no-op `onAny` handler before answering. " +
        "Steward runs compiled (`dist/`, plain node, as `steward start` does; the bench rebuilds it when older than `src/`). " +
        "After each level the bench waits for Steward's worker to finish the backlog, so work accepted in one level is not billed to the next; " +
        "CPU ms/delivery is the server's CPU time (all threads) over that level and its catch-up, per delivery answered 2xx: on a shared machine it moves less than the rates.",
      "",
      intakeTable(i),
      "",
      usageTable(i),
      ...(i.work ? ["", `Steward's worker over the run (${i.work}).`] : []),
    );
  }
  if (r.burst) {
    const b = r.burst;
    parts.push(
      ...heading("## 1b. Burst: every delivery answered within GitHub's timeout"),
      `${b.deliveries} signed deliveries (same payload mix) offered as fast as autocannon sends them over ${b.connections} connections, ` +
        `client timeout ${b.timeoutSeconds} s (GitHub gives up on a delivery after 10 s). Steward (${b.handlers === "builtin" ? "built-in handlers against the sandbox hub" : "no-op handler"}) answers once a delivery is recorded; ` +
        `its backlog is then worked off, and the drain is timed from the last answer until the worker had processed everything. ` +
        `Probot runs beside it (same run, one after the other) with a handler that makes one API call inline to a local stub answering after ${b.apiDelayMs} ms, ` +
        "as a Probot app doing its work in the request does.",
      "",
      table(
        ["Server", "Answered 2xx", "Timeouts (> 10 s)", "Other errors", "Burst took s", "p50 ms", "p99 ms", "max ms", "Backlog at last answer", "Backlog drained after s", "Peak RSS"],
        b.rows.map((x) => [x.server, `${x.requests - x.non2xx}/${x.offered}`, x.timeouts, x.errors - x.timeouts, fmt(x.seconds, 1), x.p50, x.p99, x.max, x.backlogAtEnd ?? "n/a", x.drainSeconds === undefined ? "n/a" : fmt(x.drainSeconds, 1), mb(x.peakRss)]),
      ),
    );
  }
  if (r.e2e) {
    parts.push(
      ...heading("## 2. End-to-end latency (sandbox hub)"),
      "The sandbox hub runs workflows at a steady rate and sends their webhooks straight to Steward, whose HTTP server stamps when each " +
        "delivery reached it (Node's `http.server.request.start` diagnostics channel: no proxy between them, nothing added to the loop measured); " +
        "the hub's request log records when Steward's answer arrived (the request's arrival at the hub, not the end of the hub's own handling of it; " +
        "to a tenth of a millisecond, on the machine's monotonic clock, which both processes read). Re-run: a job fails with a transient " +
        "log line, `rerun` with `delay: 0s`; the answer is `POST .../rerun-failed-jobs`. Protection rule: `deployments` with a branch rule; the " +
        "answer is `POST .../deployment_protection_rule`. The hub runs in a process of its own, as GitHub is not in Steward's process: the fourteen signed webhooks it sends " +
        "for each run and its check of every request against the OpenAPI description are not on Steward's event loop (the target rows). The last two rows keep the hub in " +
        "Steward's process (as `steward start` in sandbox mode has it, and as this section measured before 2026-11-29), where the hub's work for each run shares Steward's one event loop. " +
        "Two rows hold every API answer, and the log storage host's, back (the hub's " +
        "latency fault), as a network would, where reads asked together wait together: their latency is the round trips in a row. " +
        "Without `read_ahead` the failed job is noted from its `workflow_job.completed` delivery and the decision reads its log first, then the jobs list, " +
        "the branch and the run while the storage host is read; the row with logs read ahead has \`read_ahead\` (a failed job's log is read when the job finishes, before its run does). " +
        "API calls about the run: the run, its jobs list and its jobs' logs.",
      "",
      e2eTable(r.e2e),
    );
  }
  if (r.cost) {
    parts.push(
      ...heading("## 3. API cost of a secrets sync"),
      "5 repository secrets and 3 variables in every repository, synced by Steward's sync engine (`syncOrganisation`) against a fresh hub, " +
        "counting the installation's requests (GET = read, anything else = write; the token request is not counted). Steward's reads are " +
        "conditional (If-None-Match with the ETag of the last answer): an unchanged list answers 304, which GitHub (and the hub) does not count " +
        "against the rate limit; rate-limited reads are the others, and the hub's rate-limit bucket is checked to have charged exactly those and the writes. " +
        "\"no change\" is the sync right after the first, whose writes changed every list (it reads each once, which is also how it learns the " +
        "`updated_at` baselines of what it wrote); \"no change again\" is the steady state, nothing changed since the last sync. " +
        "GitHub's ETags belong to the token that read them, so the run right after an installation-token renewal (hourly; a periodic sync every " +
        "`STEWARD_SYNC_INTERVAL`, 6 h by default, always has a new token) pays for every read again. The naive approach lists the " +
        "repositories, then per repository GETs the public key, PUTs each secret and PATCHes each variable (POST when it does not exist yet). " +
        "\"Shared\" is Steward with the same policy and `share: org` on every entry: each becomes one organisation secret or variable shared with " +
        "the selected repositories, so a first sync writes once per entry rather than once per entry and repository, and a repository added " +
        "later costs one `PUT /orgs/{org}/actions/secrets/{name}/repositories/{repository_id}` per entry.",
      "",
      costTable(r.cost),
    );
  }
  if (r.memory) {
    const x = r.memory;
    parts.push(
      ...heading("## 4. Memory over a long run"),
      `${x.processed} deliveries fed to a real Steward (durability \`${x.durability}\`, no-op handler) through its intake in-process ` +
        "(`steward.engine.intake.record`, what the HTTP intake calls after verifying the signature), at most 500 ahead of the worker; finished " +
        `deliveries purged as it goes (the engine's own purge, retention zero) so the disk stays bounded. RSS and heap measured after a full GC. ` +
        `Took ${fmt(x.seconds)} s (${fmt(x.processed / x.seconds)} deliveries/s recorded and processed), ${fmt((x.cpu.user + x.cpu.system) / 1e6, 1)} CPU s; peak RSS ${mb(x.maxRss)}.`,
      "",
      memoryTable(x),
    );
  }
  if (r.tokens) {
    parts.push(
      ...heading("## 5. Installation-token mints with replicas"),
      "Every replica calls the API for one installation all along; the sandbox hub counts the installation tokens it issues. Compressed time: " +
        "tokens live a few seconds instead of an hour and are renewed at their half-life (a real one-hour token is renewed 5 minutes before it " +
        "expires), so one renewal window here stands for 55 minutes; mints per window times 60/55 is the hourly figure. \"per replica\" is each " +
        "replica keeping its tokens in memory (and minting again after every restart); \"shared\" is the sealed token in Redis, renewed by one " +
        "replica under a mint lease.",
      "",
      table(["Replicas", "Token cache", "Windows", "Mints", "Mints per window", "Mints per installation per hour"], r.tokens.map((t) => [t.replicas, t.cache, t.windows, t.mints, fmt(t.mintsPerWindow, 2), fmt(t.mintsPerHour, 2)])),
    );
  }
  if (r.console) {
    const c = r.console;
    parts.push(
      ...heading("## 6. Console pages"),
      `${c.deliveries} deliveries stored (over one day, 4 repositories, 5 events, ~1% dead, two handler outcomes each; filled through the store's own ` +
        `record/claim/outcome/finish in ${Object.entries(c.fillSeconds).map(([k, v]) => `${fmt(v)} s on ${k}`).join(", ")}). Each page fetched over HTTP by a ` +
        "signed-in owner (sign-in through the sandbox hub's OAuth), or a member who sees 3 of the 4 repositories; after 3 warm-up requests. Target: every page under 200 ms." +
        (c.skipped.length ? ` Skipped: ${c.skipped.join("; ")}.` : ""),
      "",
      consoleTable(c),
    );
  }
  if (r.profile) {
    parts.push(
      ...heading("## Where Steward's intake CPU goes"),
      `V8's sampling profile of the Steward server's main thread during a concurrency-${r.profile.connections ?? 50} load (after warm-up; start-up excluded). ` +
        "It records where the thread is, not whether it runs: a native call that waits (a system call that blocks, a lock) counts as busy, " +
        "so rows for file and SQLite calls can overstate their CPU (analysis.md compares them with `perf`).",
      "",
      profileTables(r.profile),
    );
  }
  if (notes.trim()) parts.push("", notes.trim());
  return parts.join("\n") + "\n";
}
