// Console pages with many deliveries kept: for each store, deliveries seeded through the store's own
// API (recorded, claimed, each handler's outcome recorded and the delivery finished, as the engine
// does; some dead letters acknowledged as the console records it), then Steward started on that
// store against the sandbox hub in a process of its own, and every page the console's navigation
// lists loaded over HTTP by a signed-in owner, one load at a time.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { acknowledge } from "../../src/console/actions.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import type { StewardStore } from "../../src/store/contract.js";
import type { IncomingDelivery, Outcome } from "../../src/store/records.js";
import { percentile } from "./load.js";
import { startServer } from "./servers/child.js";

export interface ConsoleOptions {
  deliveries: number;
  /** Loads of each page (after one warm-up load). */
  loads: number;
}

export interface PageTiming {
  page: string;
  p50: number;
  max: number;
}

export interface ConsoleRow {
  store: string;
  /** Seconds the seeding took, and how many deliveries of each kind it left. */
  seedSeconds: number;
  seeded: Record<string, number>;
  pages: PageTiming[];
}

/** A store the bench seeds and Steward then opens: how to open it here, and the child's environment. */
export interface StoreUnderTest {
  name: string;
  open(): Promise<StewardStore>;
  /** After seeding: what the database would have done by itself since (PostgreSQL: statistics). */
  settle?(): Promise<void>;
  env: Record<string, string>;
}

const ORG = "acme";
const OTHER = "globex";
const OWNER = "octo-admin";
const DAY = 86_400_000;
const LEASE_MS = 600_000;

/** What happens to a delivery, by share of every 100 (the shape of a busy estate's week). */
interface Kind {
  name: string;
  share: number;
  event: string;
  action?: string;
  /** Handlers and their outcomes; none: no handler takes it (recorded settled). */
  outcomes: [string, Outcome][];
  /** The delivery's end: done, retrying (a retry due hours later) or dead. */
  end: "done" | "retrying" | "dead";
}

const KINDS: Kind[] = [
  { name: "no handler", share: 30, event: "push", outcomes: [], end: "done" },
  { name: "no handler", share: 8, event: "issues", action: "opened", outcomes: [], end: "done" },
  {
    name: "handled",
    share: 20,
    event: "pull_request",
    action: "synchronize",
    outcomes: [["checks", { status: "done", summary: "steward/policy: success (3 rules, 0 problems)" }]],
    end: "done",
  },
  {
    name: "handled",
    share: 14,
    event: "workflow_run",
    action: "completed",
    outcomes: [["rerun", { status: "skipped", reason: "the run succeeded" }]],
    end: "done",
  },
  {
    name: "handled",
    share: 6,
    event: "workflow_run",
    action: "completed",
    outcomes: [["rerun", { status: "done", summary: "re-ran 2 failed jobs (rule 1: log matched ECONNRESET)" }]],
    end: "done",
  },
  {
    name: "handled",
    share: 8,
    event: "deployment_protection_rule",
    action: "requested",
    outcomes: [["deployments", { status: "done", summary: "approved production for run 4242: branch main allowed" }]],
    end: "done",
  },
  {
    name: "handled",
    share: 6,
    event: "push",
    outcomes: [
      ["checks", { status: "skipped", reason: "checks.config is false" }],
      ["secrets", { status: "done", summary: "synced 12 secrets in 4 repositories" }],
    ],
    end: "done",
  },
  {
    name: "retrying",
    share: 3,
    event: "workflow_run",
    action: "completed",
    outcomes: [["rerun", { status: "failed", error: "GitHub answered 502 Bad Gateway", retryable: true }]],
    end: "retrying",
  },
  {
    name: "dead",
    share: 5,
    event: "deployment_protection_rule",
    action: "requested",
    outcomes: [
      ["deployments", { status: "failed", error: "GitHub answered 422: the deployment is no longer waiting" }],
    ],
    end: "dead",
  },
];
/** Every how-manyth dead letter is acknowledged. */
const ACKNOWLEDGE_EVERY = 4;

const kindOf = (i: number): Kind => {
  let at = i % 100;
  for (const k of KINDS) {
    if (at < k.share) return k;
    at -= k.share;
  }
  return KINDS[0]!;
};

export interface BenchWorld {
  hub: HubHandle;
  /** Repositories and installations deliveries come from: most the owner's, some another organisation's. */
  sources: { repository: string; installationId: number }[];
}

export async function benchWorld(): Promise<BenchWorld> {
  const hub = await createHub();
  const acme = hub.control.installation(ORG)!.id;
  const repos = ["web", "api", "service-billing"];
  for (let i = 1; i <= 12; i++) {
    hub.control.createRepo({ owner: ORG, name: `svc-${i}`, files: { "README.md": "# svc\n" } });
    repos.push(`svc-${i}`);
  }
  hub.control.createOrg(OTHER, { owners: ["contributor"] });
  hub.control.createRepo({ owner: OTHER, name: "site", files: { "README.md": "# site\n" } });
  const globex = hub.control.install(OTHER, { repositories: "all" }).id;
  return {
    hub,
    sources: [
      ...repos.map((r) => ({ repository: `${ORG}/${r}`, installationId: acme })),
      { repository: `${OTHER}/site`, installationId: globex },
    ],
  };
}

function delivery(i: number, n: number, world: BenchWorld, now: number): IncomingDelivery {
  const k = kindOf(i);
  const source = world.sources[(i * 7) % world.sources.length]!;
  const id = `bench-${String(i).padStart(7, "0")}`;
  // Spread over the last 7 days, oldest first, the newest minutes of it in the overview's window.
  const receivedAt = new Date(now - Math.round(((n - i) / n) * 7 * DAY));
  return {
    id,
    event: k.event,
    action: k.action,
    installationId: source.installationId,
    repository: source.repository,
    headers: { "x-github-event": k.event, "x-github-delivery": id, "content-type": "application/json" },
    payload: JSON.stringify({
      ...(k.action ? { action: k.action } : {}),
      repository: { full_name: source.repository, name: source.repository.split("/")[1] },
      installation: { id: source.installationId },
      sender: { login: "dev-dana", type: "User" },
    }),
    receivedAt,
    ...(k.outcomes.length === 0 ? { settled: true } : {}),
  };
}

/**
 * `n` deliveries through the store's API, a thousand at a time: recorded (concurrently, so the
 * stores that batch writes do), then claimed in pages and finished as the engine finishes them.
 */
export async function seedDeliveries(
  store: StewardStore,
  n: number,
  world: BenchWorld,
): Promise<Record<string, number>> {
  const now = Date.now();
  const counts: Record<string, number> = {};
  let dead = 0;
  for (let from = 0; from < n; from += 1_000) {
    const batch = Array.from({ length: Math.min(1_000, n - from) }, (_, j) => delivery(from + j, n, world, now));
    await Promise.all(batch.map((d) => store.deliveries.record(d)));
    const byId = new Map(batch.map((d, j) => [d.id, kindOf(from + j)]));
    let waiting = batch.filter((d) => !d.settled).length;
    while (waiting > 0) {
      const claimed = await store.deliveries.claimDeliveries(LEASE_MS, 200);
      if (claimed.length === 0) throw new Error(`seeding: ${waiting} recorded deliveries could not be claimed`);
      waiting -= claimed.length;
      await Promise.all(
        claimed.map(async ({ token, delivery: d }) => {
          const k = byId.get(d.id);
          if (!k) throw new Error(`seeding claimed ${d.id}, not of this batch`);
          for (const [handler, outcome] of k.outcomes)
            await store.deliveries.recordOutcome(token, d.id, handler, outcome, 0.05 + (d.id.length % 7) / 10);
          const error = k.outcomes.find(([, o]) => o.status === "failed")?.[1];
          const lastError = error?.status === "failed" ? `${k.outcomes[0]![0]}: ${error.error}` : "";
          await store.deliveries.finishDelivery(
            token,
            d.id,
            k.end === "done"
              ? { status: "done" }
              : k.end === "retrying"
                ? { status: "failed", retryAt: new Date(now + 6 * 3_600_000), lastError }
                : { status: "dead", lastError },
          );
        }),
      );
    }
    for (const [j, d] of batch.entries()) {
      const k = kindOf(from + j);
      counts[k.name] = (counts[k.name] ?? 0) + 1;
      if (k.end === "dead" && dead++ % ACKNOWLEDGE_EVERY === 0) {
        await acknowledge(store, d.id, { login: OWNER, at: Date.now(), reason: "the deployment was cancelled" });
        counts["acknowledged"] = (counts["acknowledged"] ?? 0) + 1;
      }
    }
  }
  return counts;
}

/** Cookies kept between requests, and sign-in through the hub's OAuth pages as a browser walks them. */
class Visitor {
  readonly #cookies = new Map<string, string>();
  constructor(readonly base: string) {}

  async get(url: string): Promise<{ status: number; location: string | null; text: string }> {
    const absolute = new URL(url, this.base).toString();
    const same = new URL(absolute).origin === new URL(this.base).origin;
    const res = await fetch(absolute, {
      redirect: "manual",
      headers: same && this.#cookies.size ? { cookie: [...this.#cookies].map(([k, v]) => `${k}=${v}`).join("; ") } : {},
    });
    if (same)
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(";");
        const eq = pair!.indexOf("=");
        this.#cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
      }
    return { status: res.status, location: res.headers.get("location"), text: await res.text() };
  }

  async signIn(login: string): Promise<void> {
    const start = await this.get("/console/login");
    const authorize = start.location!;
    const chooser = await this.get(authorize);
    const link = new RegExp(`href="([^"]+)">Sign in as ${login}<`).exec(chooser.text);
    if (!link) throw new Error(`the hub's authorize page does not offer ${login}`);
    const chosen = await this.get(new URL(link[1]!.replace(/&#38;/g, "&"), authorize).toString());
    const back = await this.get(chosen.location!);
    if (back.status !== 303 && back.status !== 200) throw new Error(`sign-in ended with ${back.status}`);
  }
}

/** Each page the navigation lists, and the lists' filters and next page, as an owner opens them. */
async function pagesToLoad(v: Visitor, deadId: string): Promise<[string, string][]> {
  const overview = await v.get("/console");
  const menu = /<nav aria-label="Console">([\s\S]*?)<\/nav>/.exec(overview.text)?.[1] ?? "";
  const nav = [...menu.matchAll(/<a href="(\/console\/[a-z-]+)"[^>]*>([^<]+)<\/a>/g)]
    .map((m) => [m[1]!, m[2]!] as const)
    .filter(([href]) => !["/console/deliveries", "/console/dead", "/console/login"].includes(href));
  const list = await v.get("/console/deliveries");
  const next = /<a href="([^"]+)" rel="next">/.exec(list.text)?.[1]?.replace(/&#38;/g, "&");
  if (!next) throw new Error("the deliveries list has no next page");
  const since = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16);
  return [
    ["overview", "/console"],
    ["deliveries", "/console/deliveries"],
    ["deliveries, event filter", "/console/deliveries?event=workflow_run.completed"],
    ["deliveries, status dead", "/console/deliveries?status=dead"],
    ["deliveries, outcome failed", "/console/deliveries?outcome=failed"],
    ["deliveries, last hour", `/console/deliveries?since=${since}`],
    ["deliveries, next page", next],
    ["a delivery (dead letter)", `/console/deliveries/${deadId}`],
    ["dead letters", "/console/dead"],
    ...[...new Map(nav).entries()].map(([href, title]) => [title.toLowerCase(), href] as [string, string]),
    ["policy (acme/web)", "/console/policies/acme/web"],
  ];
}

async function timePages(url: string, loads: number, deadId: string): Promise<PageTiming[]> {
  const v = new Visitor(url);
  await v.signIn(OWNER);
  const out: PageTiming[] = [];
  for (const [page, path] of await pagesToLoad(v, deadId)) {
    const times: number[] = [];
    for (let i = 0; i <= loads; i++) {
      const at = performance.now();
      const r = await v.get(path);
      const ms = performance.now() - at;
      if (r.status !== 200) throw new Error(`${page} (${path}) answered ${r.status}`);
      // The first load warms up: policy reads from the hub, the access question, JIT.
      if (i > 0) times.push(ms);
    }
    out.push({ page, p50: percentile(times, 50), max: Math.max(...times) });
  }
  return out;
}

export async function benchConsole(
  o: ConsoleOptions,
  stores: StoreUnderTest[],
  log: (line: string) => void,
): Promise<ConsoleRow[]> {
  const world = await benchWorld();
  const rows: ConsoleRow[] = [];
  try {
    for (const s of stores) {
      const started = performance.now();
      const store = await s.open();
      let seeded: Record<string, number>;
      try {
        seeded = await seedDeliveries(store, o.deliveries, world);
      } finally {
        await store.close();
      }
      await s.settle?.();
      const seedSeconds = (performance.now() - started) / 1000;
      log(`console, ${s.name}: ${o.deliveries} deliveries seeded in ${seedSeconds.toFixed(0)} s`);
      const steward = await startServer("steward", {
        ...s.env,
        BENCH_HUB: JSON.stringify({
          env: world.hub.env,
          reviewerToken: world.hub.control.userToken("release-manager"),
        }),
      });
      try {
        const base = new URL(steward.url).origin;
        // The second dead letter of the seeding (the first is acknowledged).
        const deadId = `bench-${String(100 + KINDS.slice(0, -1).reduce((n, k) => n + k.share, 0)).padStart(7, "0")}`;
        const pages = await timePages(base, o.loads, deadId);
        for (const p of pages)
          log(`console, ${s.name}, ${p.page}: p50 ${p.p50.toFixed(0)} ms, max ${p.max.toFixed(0)} ms`);
        rows.push({ store: s.name, seedSeconds, seeded, pages });
      } finally {
        await steward.stop();
      }
    }
    return rows;
  } finally {
    await world.hub.close();
  }
}

/** A scratch data directory for the SQLite store, removed by `drop`. */
export function sqliteDir(): { dir: string; drop(): void } {
  const dir = mkdtempSync(join(tmpdir(), "steward-bench-console-"));
  return { dir, drop: () => rmSync(dir, { recursive: true, force: true }) };
}
