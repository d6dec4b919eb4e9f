// Steward's Prometheus metrics, in a Registry of their own (never prom-client's global
// one, so several services in one process, e.g. tests, do not collide).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { ReplicaEntry } from "../coordination/replicas.js";

export interface Metrics {
  readonly registry: Registry;
  /** One webhook request answered with `status`. */
  deliveryReceived(event: string, status: number): void;
  /** One handler run finished. */
  handlerOutcome(handler: string, outcome: string, seconds: number): void;
  /** One API response (or failure) for an installation, with X-RateLimit-Remaining when sent. */
  apiRequest(installationId: number | "app", status: number, remaining?: number): void;
  /** A handler's start(): 1 once it succeeded, 0 while it is still starting or retrying. */
  handlerStart(handler: string, state: string): void;
  /** Whether GitHub accepts the app credential (1), rejects it (0), or was not reached yet (-1). */
  appCredential(state: string): void;
  /** Where the queue depth comes from (read at scrape time). */
  setQueueDepthSource(source: () => Promise<number>): void;
  /** Where the live replicas and what they hold come from (Redis or PostgreSQL deployments; read at scrape time). */
  setReplicaSource(source: () => Promise<ReplicaEntry[]>): void;
  /** This process minted an installation token. */
  tokenMinted(installationId: string): void;
  /** Seconds from when GitHub says a delivery's event happened to its receipt (intake/github-time.ts). */
  deliveryLag(event: string, seconds: number): void;
  /** Seconds a delivery waited from being due (recorded, retry time, replayed) to its claim by a worker. */
  queueWait(seconds: number): void;
  /** Also hand every lag and queue time to `sink` (the store's timing record the console reads). */
  setTimingSink(sink: (kind: "lag" | "queue", seconds: number) => void): void;
  /** Where the due time of the longest-waiting delivery comes from (read at scrape time). */
  setOldestDueSource(source: () => Promise<Date | undefined>): void;
  /** Where the number of dead deliveries comes from (read at scrape time). */
  setDeadSource(source: () => Promise<number>): void;
  /** Whether the store can record deliveries now, as /readyz answers (read at scrape time). */
  setReadySource(source: () => Promise<boolean>): void;
  /** What is paused now (read at scrape time from the store). */
  setPausedSource(source: () => Promise<{ scope: string; target: string }[]>): void;
  /** The app's installations, as GitHub last reported them (GET /app). */
  installations(count: number): void;
  /** Prometheus text exposition. */
  text(): Promise<string>;
  readonly contentType: string;
}

/** A scrape-time read of the store waits at most this long (a store that does not answer is not ready). */
export const SCRAPE_READ_TIMEOUT_MS = 2_000;

/** `read()`'s answer, or "unanswered" when it failed or did not answer in time: a scrape never hangs on the store. */
async function boundedRead<T>(read: () => Promise<T>): Promise<T | "unanswered"> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"unanswered">((resolve) => {
    timer = setTimeout(() => resolve("unanswered"), SCRAPE_READ_TIMEOUT_MS);
    timer.unref();
  });
  try {
    return await Promise.race([read(), late]);
  } catch {
    return "unanswered";
  } finally {
    clearTimeout(timer);
  }
}

export function createMetrics(opts: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: "steward_" });

  const received = new Counter({
    name: "steward_deliveries_received_total",
    help: "Webhook deliveries received, by event and HTTP status answered",
    labelNames: ["event", "status"] as const,
    registers: [registry],
  });
  const sources: { depth?: () => Promise<number>; dead?: () => Promise<number> } = {};
  const storeGauge = (name: string, help: string, source: keyof typeof sources) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const read = sources[source];
        if (!read) return;
        const value = await boundedRead(read);
        // An unusable store shows as a missing sample; /readyz and steward_store_ready report it.
        if (value === "unanswered") this.reset();
        else this.set(value);
      },
    });
  storeGauge("steward_queue_depth", "Deliveries waiting or running", "depth");
  storeGauge(
    "steward_deliveries_dead",
    "Deliveries parked as dead (steward deliveries list --status dead; replay --status dead)",
    "dead",
  );
  // GitHub's p95 is under a minute; incidents reached about 40 minutes.
  const lag = new Histogram({
    name: "steward_delivery_lag_seconds",
    help: "From when GitHub says a delivery's event happened (payload timestamps; docs/operations.md) to its receipt, by event",
    labelNames: ["event"] as const,
    buckets: [1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200],
    registers: [registry],
  });
  const queueWait = new Histogram({
    name: "steward_delivery_queue_seconds",
    help: "From when a delivery was due (recorded, retry time, replayed) to its claim by a worker",
    buckets: [0.005, 0.025, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
    registers: [registry],
  });
  let oldestDue: (() => Promise<Date | undefined>) | undefined;
  let timingSink: ((kind: "lag" | "queue", seconds: number) => void) | undefined;
  new Gauge({
    name: "steward_queue_oldest_age_seconds",
    help: "How long the longest-waiting delivery has been due and not claimed (0: none waiting)",
    registers: [registry],
    async collect() {
      if (!oldestDue) return;
      const at = await boundedRead(oldestDue);
      if (at === "unanswered") this.reset();
      else this.set(at ? Math.max(0, (Date.now() - at.getTime()) / 1000) : 0);
    },
  });
  const outcomes = new Counter({
    name: "steward_handler_outcomes_total",
    help: "Handler runs, by handler and outcome (done, skipped, failed)",
    labelNames: ["handler", "outcome"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "steward_handler_duration_seconds",
    help: "Handler run time",
    labelNames: ["handler"] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const apiRequests = new Counter({
    name: "steward_api_requests_total",
    help: "API requests, by installation and HTTP status (0: no response)",
    labelNames: ["installation", "status"] as const,
    registers: [registry],
  });
  const remaining = new Gauge({
    name: "steward_api_rate_limit_remaining",
    help: "X-RateLimit-Remaining last reported, by installation",
    labelNames: ["installation"] as const,
    registers: [registry],
  });

  let replicaSource: (() => Promise<ReplicaEntry[]>) | undefined;
  // One scrape reads the registry once for both gauges.
  let replicasRead: Promise<ReplicaEntry[] | undefined> | undefined;
  const readReplicas = () =>
    (replicasRead ??= (async () => {
      try {
        if (!replicaSource) return undefined;
        const replicas = await boundedRead(replicaSource);
        return replicas === "unanswered" ? undefined : replicas;
      } finally {
        setImmediate(() => (replicasRead = undefined));
      }
    })());
  new Gauge({
    name: "steward_replicas_alive",
    help: "Replicas of this deployment seen alive in the last few seconds (Redis or PostgreSQL deployments)",
    registers: [registry],
    async collect() {
      const replicas = await readReplicas();
      if (replicas) this.set(replicas.length);
      else this.reset();
    },
  });
  new Gauge({
    name: "steward_replica_holds",
    help: "What each live replica holds: write_slot and token_mint (installations), delivery_lease and task_lease (leases)",
    labelNames: ["replica", "what"] as const,
    registers: [registry],
    async collect() {
      // Replicas come and go: only the live ones are shown (the label set stays as small as the deployment).
      this.reset();
      for (const r of (await readReplicas()) ?? []) {
        const replica = r.id.split("/").slice(0, 2).join("/");
        this.set({ replica, what: "write_slot" }, r.writeSlots.length);
        this.set({ replica, what: "token_mint" }, r.tokenMints.length);
        this.set({ replica, what: "delivery_lease" }, r.deliveryLeases);
        this.set({ replica, what: "task_lease" }, r.taskLeases);
      }
    },
  });
  const mints = new Counter({
    name: "steward_token_mints_total",
    help: "Installation tokens minted by this process, by installation",
    labelNames: ["installation"] as const,
    registers: [registry],
  });
  const startStatus = new Gauge({
    name: "steward_handler_start_status",
    help: "1 when the handler's start succeeded; 0 while it is starting or retrying with backoff",
    labelNames: ["handler"] as const,
    registers: [registry],
  });
  const credential = new Gauge({
    name: "steward_app_credential_status",
    help: "1 when GitHub accepts the app credential (GET /app), 0 when it rejects it, -1 while unknown or unreachable",
    registers: [registry],
  });
  credential.set(-1);
  let readySource: (() => Promise<boolean>) | undefined;
  new Gauge({
    name: "steward_store_ready",
    help: "1 when the store can record deliveries (GET /readyz would answer 200), 0 when it cannot or does not answer in time",
    registers: [registry],
    async collect() {
      if (!readySource) return;
      this.set((await boundedRead(readySource)) === true ? 1 : 0);
    },
  });
  let pausedSource: (() => Promise<{ scope: string; target: string }[]>) | undefined;
  new Gauge({
    name: "steward_paused",
    help: "1 for each pause in effect: scope all (target empty), handler (its name) or installation (its id)",
    labelNames: ["scope", "target"] as const,
    registers: [registry],
    async collect() {
      this.reset();
      if (!pausedSource) return;
      const pauses = await boundedRead(pausedSource);
      if (pauses === "unanswered") return;
      for (const p of pauses) this.set(p, 1);
    },
  });
  const installations = new Gauge({
    name: "steward_installations",
    help: "Installations of the app, as GitHub last reported them (GET /app); absent until it answered",
    registers: [registry],
  });

  return {
    registry,
    handlerStart(handler, state) {
      startStatus.set({ handler }, state === "started" ? 1 : 0);
    },
    appCredential(state) {
      credential.set(state === "accepted" ? 1 : state === "rejected" ? 0 : -1);
    },
    contentType: registry.contentType,
    deliveryReceived(event, status) {
      received.inc({ event, status: String(status) });
    },
    handlerOutcome(handler, outcome, seconds) {
      outcomes.inc({ handler, outcome });
      duration.observe({ handler }, seconds);
    },
    apiRequest(installationId, status, left) {
      const installation = String(installationId);
      apiRequests.inc({ installation, status: String(status) });
      if (left !== undefined && Number.isFinite(left)) remaining.set({ installation }, left);
    },
    setQueueDepthSource(source) {
      sources.depth = source;
    },
    deliveryLag(event, seconds) {
      lag.observe({ event }, seconds);
      timingSink?.("lag", seconds);
    },
    queueWait(seconds) {
      queueWait.observe(seconds);
      timingSink?.("queue", seconds);
    },
    setTimingSink(sink) {
      timingSink = sink;
    },
    setOldestDueSource(source) {
      oldestDue = source;
    },
    setDeadSource(source) {
      sources.dead = source;
    },
    setReplicaSource(source) {
      replicaSource = source;
    },
    setReadySource(source) {
      readySource = source;
    },
    setPausedSource(source) {
      pausedSource = source;
    },
    installations(count) {
      installations.set(count);
    },
    tokenMinted(installation) {
      mints.inc({ installation });
    },
    text: () => registry.metrics(),
  };
}
