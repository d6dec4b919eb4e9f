// The alert rules and the dashboard in deploy/prometheus: promtool validates the rules and runs
// their unit tests; every metric the rules and the dashboard read is one Steward exports; and a
// real Prometheus scraping a real `steward start` sees StewardDeadLettersGrowing go from inactive
// to firing once a delivery becomes a dead letter.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it, vi } from "vitest";
import { parse, stringify } from "yaml";
import { examples } from "../support/webhook-examples.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { realAppEnv, startChild } from "../service/child.js";
import { deliveryId, postDelivery } from "../service/helpers.js";
import { perTest } from "../service/per-test.js";
import { freePort } from "../lifecycle/support.js";
import { PROMETHEUS_RULE_FILE, RULES_FILE, prometheusRule } from "../../scripts/prometheus-rule.js";

const DIR = resolve(__dirname, "../../deploy/prometheus");
const RULES = join(DIR, "steward-rules.yml");
const DASHBOARD = join(DIR, "steward-dashboard.json");
const run = promisify(execFile);
const scope = perTest();

const missing = ["/usr/bin/promtool", "/usr/bin/prometheus"].filter((p) => !existsSync(p));
if (missing.length) console.warn(`Prometheus tests skipped: no ${missing.join(", ")} (Debian's prometheus package)`);

interface Rule {
  alert: string;
  expr: string;
  for?: string;
}
const rulesOf = async (): Promise<Rule[]> =>
  (parse(await readFile(RULES, "utf8")) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

/** Every expression of the dashboard: its panels' targets and its annotations. */
async function dashboardExprs(): Promise<{ where: string; expr: string }[]> {
  const dashboard = JSON.parse(await readFile(DASHBOARD, "utf8")) as {
    panels: { title: string; targets: { expr: string }[] }[];
    annotations: { list: { name: string; expr?: string }[] };
  };
  return [
    ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: p.title, expr: t.expr }))),
    ...dashboard.annotations.list.flatMap((a) => (a.expr ? [{ where: `annotation ${a.name}`, expr: a.expr }] : [])),
  ];
}

/** Metric names an expression reads: identifiers before a selector `{`, a range `[` or alone, minus PromQL's words. */
function metricNames(expr: string): string[] {
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const noLabels = noStrings
    .replace(/\{[^}]*\}/g, "{}")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "");
  const words = [...noLabels.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map((m) => m[1]!);
  const keywords = new Set([
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "e",
    "Inf",
    "NaN",
  ]);
  return words.filter((w) => !keywords.has(w) && !/^\d/.test(w) && !/^[smhdwy]$/.test(w));
}

/** What Steward exports: every metric of its registry, histograms with their series' suffixes. */
async function exported(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const m of await createMetrics().registry.getMetricsAsJSON()) {
    names.add(m.name);
    // prom-client types `type` as a numeric enum; at run time it is the exposition name.
    if ((m.type as unknown as string) === "histogram")
      for (const s of ["_bucket", "_sum", "_count"]) names.add(m.name + s);
  }
  return names;
}
/** Prometheus's own series the rules and the dashboard may read besides Steward's. */
const PROMETHEUS_OWN = new Set(["up", "ALERTS"]);

describe("the PrometheusRule in deploy/kubernetes", () => {
  it("is the rules file wrapped as the operator's resource, text and comments alike (npm run prometheus-rule)", async () => {
    const root = resolve(__dirname, "../..");
    const rules = await readFile(join(root, RULES_FILE), "utf8");
    const manifest = await readFile(join(root, PROMETHEUS_RULE_FILE), "utf8");
    expect(manifest).toBe(prometheusRule(rules));
    const resource = parse(manifest) as { kind: string; spec: { groups: unknown } };
    expect(resource.kind).toBe("PrometheusRule");
    expect(resource.spec.groups).toEqual((parse(rules) as { groups: unknown }).groups);
    // Not vacuous: a rule added to the file alone is a difference.
    const edited = rules.replace("      - alert: StewardQueueAgeHigh", "      - alert: StewardQueueAgeHigher");
    expect(edited).not.toBe(rules);
    expect(prometheusRule(edited)).not.toBe(manifest);
  });
});

describe.skipIf(missing.length > 0)("alert rules and dashboard", () => {
  it("promtool accepts the rules and their unit tests pass", async () => {
    const checked = await run("promtool", ["check", "rules", RULES]);
    expect(checked.stdout).toMatch(/SUCCESS: \d+ rules found/);
    const tested = await run("promtool", ["test", "rules", "steward-rules.test.yml"], { cwd: DIR });
    expect(tested.stdout).toContain("SUCCESS");
  });

  it("has an alert for each failure mode, each reading only metrics Steward exports", async () => {
    const rules = await rulesOf();
    expect(rules.map((r) => r.alert).sort()).toEqual(
      [
        "StewardAppCredentialRejected",
        "StewardDeadLettersGrowing",
        "StewardNoDeliveries",
        "StewardQueueAgeHigh",
        "StewardRateLimitLow",
        "StewardReplicaDown",
        "StewardReplicaUnregistered",
        "StewardStoreNotReady",
      ].sort(),
    );
    const known = await exported();
    for (const rule of rules) {
      const names = metricNames(rule.expr);
      expect(names.length, rule.alert).toBeGreaterThan(0);
      for (const name of names)
        expect(known.has(name) || PROMETHEUS_OWN.has(name), `${rule.alert}: ${name}`).toBe(true);
    }
  });

  it("the dashboard is JSON whose every panel reads metrics Steward exports", async () => {
    const exprs = await dashboardExprs();
    expect(exprs.length).toBeGreaterThan(10);
    const known = await exported();
    const byPanel = new Map<string, string[]>();
    for (const { where, expr } of exprs) {
      const names = metricNames(expr);
      expect(names.length, `${where}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) expect(known.has(name) || PROMETHEUS_OWN.has(name), `${where}: ${name}`).toBe(true);
      byPanel.set(where, [...(byPanel.get(where) ?? []), ...names]);
    }
    const panels = [...byPanel].filter(([where]) => !where.startsWith("annotation "));
    expect(panels.length).toBeGreaterThan(10);
    for (const [where, names] of panels)
      expect(
        names.some((n) => known.has(n)),
        where,
      ).toBe(true);
  });

  it(
    "a real Prometheus scraping steward start fires StewardDeadLettersGrowing after a delivery goes dead",
    { timeout: 240_000 },
    async () => {
      const hub = await scope.hub();
      const dir = await scope.dataDir("prometheus");
      const secret = "prometheus-test-webhook-secret";
      const steward = scope.stopAfter(
        startChild({
          ...(await realAppEnv(hub, dir, secret)),
          STEWARD_HANDLERS: resolve(__dirname, "fixtures/failing-handler.ts"),
          STEWARD_MAX_ATTEMPTS: "1",
          STEWARD_SHUTDOWN_TIMEOUT: "5s",
          LOG_LEVEL: "info",
        }),
        (s) => s.proc.exitCode === null && s.proc.kill("SIGKILL"),
      );
      const stewardUrl = await steward.listening;

      // The shipped rule, with a short `for:` so the test waits seconds, not a minute.
      const rules = parse(await readFile(RULES, "utf8")) as { groups: { rules: Rule[] }[] };
      for (const rule of rules.groups.flatMap((g) => g.rules)) rule.for = "2s";
      await writeFile(join(dir, "rules.yml"), stringify(rules));
      await writeFile(
        join(dir, "prometheus.yml"),
        stringify({
          global: { scrape_interval: "1s", scrape_timeout: "1s", evaluation_interval: "1s" },
          rule_files: [join(dir, "rules.yml")],
          scrape_configs: [{ job_name: "steward", static_configs: [{ targets: [new URL(stewardUrl).host] }] }],
        }),
      );
      const port = await freePort();
      const prometheus: ChildProcess = scope.stopAfter(
        spawn(
          "/usr/bin/prometheus",
          [
            `--config.file=${join(dir, "prometheus.yml")}`,
            `--storage.tsdb.path=${join(dir, "tsdb")}`,
            `--web.listen-address=127.0.0.1:${port}`,
            "--log.level=warn",
          ],
          { stdio: ["ignore", "ignore", "pipe"] },
        ),
        (p) => p.exitCode === null && p.kill("SIGKILL"),
      );
      let prometheusLog = "";
      prometheus.stderr!.on("data", (d) => (prometheusLog = (prometheusLog + d.toString()).slice(-4000)));
      const api = async <T>(path: string): Promise<T> => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(10_000) });
        expect(res.status, prometheusLog).toBe(200);
        return ((await res.json()) as { data: T }).data;
      };
      const ruleState = async (name: string) => {
        const data = await api<{ groups: { rules: { name: string; state: string; health: string }[] }[] }>(
          "/api/v1/rules?type=alert",
        );
        return data.groups.flatMap((g) => g.rules).find((r) => r.name === name);
      };
      const query = (q: string) =>
        api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
          `/api/v1/query?query=${encodeURIComponent(q)}`,
        );

      // Scraped, no dead letter, the rule evaluated over that data: inactive.
      await vi.waitFor(
        async () => {
          expect((await query('steward_deliveries_dead{job="steward"}')).result.map((r) => r.value[1])).toEqual(["0"]);
          expect((await query('steward_store_ready{job="steward"}')).result.map((r) => r.value[1])).toEqual(["1"]);
          expect(await ruleState("StewardDeadLettersGrowing")).toMatchObject({ state: "inactive", health: "ok" });
        },
        { timeout: 60_000, interval: 500 },
      );
      const alerts = () =>
        api<{ alerts: { labels: Record<string, string>; state: string }[] }>("/api/v1/alerts").then((d) =>
          d.alerts.filter((a) => a.labels.alertname === "StewardDeadLettersGrowing"),
        );
      expect(await alerts()).toEqual([]);

      const ping = JSON.stringify(
        (examples as { name: string; examples: unknown[] }[]).find((e) => e.name === "ping")!.examples[0],
      );
      expect((await postDelivery(stewardUrl, { body: ping, secret, event: "ping", id: deliveryId() })).status).toBe(
        202,
      );
      await vi.waitFor(
        async () => expect((await alerts()).map((a) => [a.labels.job, a.state])).toEqual([["steward", "firing"]]),
        { timeout: 120_000, interval: 500 },
      );
      expect((await query('steward_deliveries_dead{job="steward"}')).result.map((r) => r.value[1])).toEqual(["1"]);

      // The dashboard's expressions are valid PromQL to this Prometheus, over Steward's live series.
      for (const { where, expr } of await dashboardExprs()) {
        const res = await fetch(
          `http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(expr.replaceAll("$job", ".*"))}`,
        );
        expect(res.status, `${where}: ${expr}: ${await res.clone().text()}`).toBe(200);
      }

      steward.proc.kill("SIGTERM");
      expect(await steward.exited).toBe(0);
      expect(steward.out()).not.toContain(secret);
    },
  );
});
