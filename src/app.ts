// Composition: the one place Steward's parts are put together. Everything here is wiring;
// decisions live in the modules it connects.
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import type { Logger } from "pino";
import type { StewardConfig } from "./config/types.js";
import { ConfigError } from "./config/env.js";
import type { HandlerModule } from "./handler.js";
import type { OctokitFactory } from "./api/types.js";
import { createLogger } from "./log/logger.js";
import { createMetrics, type Metrics } from "./ops/metrics.js";
import { createOctokitFactory, type OctokitFactoryOptions } from "./api/client.js";
import type { Clock } from "./lifecycle/clock.js";
import { createStewardHttp, withPages, type ServerTimeouts } from "./intake/server.js";
import { openSqliteStore, type SqliteStore } from "./store/sqlite/store.js";
import type { RedisStore } from "./store/redis/store.js";
import type { PostgresStore } from "./store/postgres/store.js";
import type { ClientCoordination } from "./api/types.js";
import type { ReplicaCoordination, ReplicaEntry } from "./coordination/replicas.js";
import { inProcessCoordination } from "./coordination/in-process.js";
import { createPolicyLoader } from "./policy/loader.js";
import { createCheckReporter } from "./check-runs/reporter.js";
import { createEngine, type Engine, type EngineOptions } from "./engine/index.js";
import { loadHandlerModules } from "./modules/load.js";
import { probotRoutePages } from "./modules/probot-routes.js";
import { createContainment } from "./modules/containment.js";
import { configSecrets } from "./engine/run.js";
import { startWebhookProxy } from "./intake/webhook-proxy.js";
import { startRedeliverySweeper } from "./recovery/sweeper.js";
import { builtinHandlers } from "../handlers/index.js";
import { ApiBudget, budgetRecorder, consoleBase, detailsUrlFor, mountConsole } from "./console/mount.js";
import { policyView } from "./console/policy-view.js";
import { checkAppCredential, recheckAppCredential } from "./lifecycle/credential-check.js";
import { startPeriodic } from "./ops/periodic.js";
import { listPauses } from "./engine/pauses.js";
import type { Backoff } from "./lifecycle/backoff.js";
import { startTracing } from "./ops/tracing.js";
import { startErrorReporting } from "./ops/error-reporting.js";
import { timingRecorder } from "./ops/timing.js";

export interface Steward {
  /** Base URL it listens on, e.g. http://127.0.0.1:3000 (webhooks at url + config.webhookPath). */
  url: string;
  server: Server;
  engine: Engine;
  /** SQLite by default; PostgreSQL when config.postgresUrl is set, else Redis when config.redisUrl is (several replicas). */
  store: SqliteStore | RedisStore | PostgresStore;
  /** The handler modules it runs (built-in ones and those STEWARD_HANDLERS loaded). */
  handlers: readonly HandlerModule<any>[];
  metrics: Metrics;
  octokits: OctokitFactory;
  logger: Logger;
  /**
   * Graceful shutdown: new deliveries get 503, in-flight work finishes or goes back to the
   * queue within config.shutdownTimeoutMs, then the server and the store close. Idempotent.
   */
  close(): Promise<void>;
}

export interface CreateStewardOptions {
  config: StewardConfig;
  logger?: Logger;
  /** Default: the built-in handlers plus the modules named by STEWARD_HANDLERS. */
  handlers?: HandlerModule<any>[];
  /** API client tuning (e.g. a lower write spacing for the sandbox or benchmarks). */
  api?: Pick<OctokitFactoryOptions, "writeIntervalMs" | "maxRateLimitWaitSeconds" | "retries">;
  timeouts?: Partial<ServerTimeouts>;
  /** Redis deployments: key prefix (default `{steward}:`), e.g. one per test. */
  redis?: { prefix?: string };
  /** PostgreSQL deployments: the schema of Steward's tables (default `steward`), e.g. one per test. */
  postgres?: { schema?: string };
  /** Backoff of start-up work that needs the API (credential check, handler starts). */
  startBackoff?: Backoff;
  /** Steward's clock (default the host's; the sandbox stack passes the hub's, see src/lifecycle/clock.ts). */
  clock?: Clock;
  /** Reconnection backoff of the WEBHOOK_PROXY_URL channel (default 1 s doubling to 1 min). */
  proxyBackoff?: Backoff;
  /** How often readiness probes whether the store can record (default 1 s while failing, 10 s while not). */
  readinessProbes?: EngineOptions["readinessProbes"];
}

/** How often the app's credential and installations count are asked again after start (GET /app). */
const APP_RECHECK_MS = 10 * 60_000;

/** Bound on waiting for open HTTP requests to finish once the engine stopped. */
const HTTP_CLOSE_GRACE_MS = 2_000;

function listen(server: Server, port: number, host: string | undefined): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

function urlOf(address: AddressInfo, host: string | undefined): string {
  const shown = !host || host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  return `http://${shown.includes(":") ? `[${shown}]` : shown}:${address.port}`;
}

function closeServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => server.closeAllConnections(), graceMs);
    force.unref();
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** The built-in handlers STEWARD_BUILTIN_HANDLERS enables; an unknown name is a configuration error naming the known ones. */
export function enabledBuiltins(which: StewardConfig["builtinHandlers"]): readonly HandlerModule<any>[] {
  if (which === undefined || which === "all") return builtinHandlers;
  if (which === "none") return [];
  const known = builtinHandlers.map((h) => h.name);
  const unknown = which.filter((n) => !known.includes(n));
  if (unknown.length > 0)
    throw new ConfigError(
      "STEWARD_BUILTIN_HANDLERS",
      `names an unknown handler ${unknown.map((n) => `"${n}"`).join(", ")} (built-in handlers: ${known.join(", ")}; or all, none)`,
    );
  return builtinHandlers.filter((h) => which.includes(h.name));
}

export async function createSteward(opts: CreateStewardOptions): Promise<Steward> {
  const { config } = opts;
  const logger = opts.logger ?? createLogger({ level: config.logLevel, format: config.logFormat });
  // OTLP traces when the standard OTEL_* variables ask for them; nothing of the SDK is loaded otherwise.
  const tracing = await startTracing(logger);
  const errorReporting = await startErrorReporting(config.sentryDsn, { logger, secrets: configSecrets(config) });
  // Hosted code is contained (dispatch/containment.ts): a module that cannot load is left out,
  // and what one does outside its awaited work is attributed to it, never stopping the service.
  const containment = createContainment({ logger, secrets: configSecrets(config) });
  const handlers = containment.contain(
    opts.handlers ?? [
      ...enabledBuiltins(config.builtinHandlers),
      ...(await loadHandlerModules(config.handlerPaths, { config, logger, containment })),
    ],
    { builtin: builtinHandlers },
  );
  const metrics = createMetrics();
  const budget = new ApiBudget();
  let listening: string | undefined;
  const publicBase = () => consoleBase(config, listening);
  // Several replicas share one store: the queue and state live there, and so do the write slots,
  // the tokens and the registry of replicas. With both PostgreSQL and Redis configured, the store
  // where deliveries live coordinates too and Redis is not used (docs/decisions/0013-*).
  let cluster: ReplicaCoordination | undefined;
  let store: SqliteStore | RedisStore | PostgresStore;
  if (config.postgresUrl) {
    // Loaded only here, as Redis's: pg is not needed by a single-process service.
    const [{ openPostgresStore }, { openPostgresCoordination }] = await Promise.all([
      import("./store/postgres/store.js"),
      import("./coordination/postgres/cluster.js"),
    ]);
    const schema = opts.postgres?.schema;
    // The store first: it brings the schema (the coordination's tables included) to this version.
    const postgres = await openPostgresStore(config.postgresUrl, {
      logger,
      durability: config.durability ?? "process",
      ...(schema ? { schema } : {}),
    });
    store = postgres;
    cluster = openPostgresCoordination({
      url: config.postgresUrl,
      config,
      logger,
      ...(schema ? { schema } : {}),
      onMint: (id) => metrics.tokenMinted(id),
      // The store wakes the other replicas only while the registry sees some alive.
      onOthers: (alive) => postgres.othersAlive(alive),
    });
  } else if (config.redisUrl) {
    // Loaded only here: ioredis and the Redis store are several MB of a single-process service's memory.
    const [{ openRedisCoordination }, { openRedisStore }] = await Promise.all([
      import("./coordination/redis/cluster.js"),
      import("./store/redis/store.js"),
    ]);
    const prefix = opts.redis?.prefix;
    cluster = await openRedisCoordination({
      url: config.redisUrl,
      config,
      logger,
      prefix,
      onMint: (id) => metrics.tokenMinted(id),
    });
    store = await openRedisStore(config.redisUrl, { logger, ...(prefix ? { prefix } : {}) }).catch(
      async (e: unknown) => {
        await cluster?.close();
        throw e;
      },
    );
  } else {
    store = openSqliteStore(config.dataDir, { durability: config.durability ?? "process", logger, serviceLock: true });
  }
  // Aborted at the shutdown bound: from then on no API request leaves this process.
  const hardStop = new AbortController();
  // Fires when shutdown begins: start-up work still retrying gives up.
  const stopping = new AbortController();
  metrics.setDeadSource(() => store.browse.countDead());
  metrics.setOldestDueSource(() => store.deliveries.oldestDueAt());
  const timing = timingRecorder(store.kv, {
    onError: (e) => logger.warn({ err: e }, "delivery timing not recorded"),
  });
  metrics.setTimingSink((kind, seconds) => timing.observe(kind, seconds));
  const budgetWrites = budgetRecorder(store.kv, budget, {
    onError: (e) => logger.warn({ err: e }, "API budget not recorded"),
  });
  const octokits = createOctokitFactory({
    config,
    logger,
    signal: hardStop.signal,
    observe: {
      request: (who, status, remaining, window) => {
        metrics.apiRequest(who, status, remaining);
        budget.note(who, remaining, window);
      },
    },
    coordination: cluster?.coordination ?? inProcessCoordination(),
    ...(config.writeIntervalMs !== undefined ? { writeIntervalMs: config.writeIntervalMs } : {}),
    ...opts.api,
  });
  if (cluster) {
    cluster.register();
    metrics.setReplicaSource(cluster.replicas);
  }
  let engine: Engine | undefined;
  try {
    // A file known missing stays so until an event this process runs says otherwise. Replicas run
    // each other's events, so with a shared store a missing file is asked for again as often as
    // a found one, or a file one replica saw added would stay missing on the others.
    const policies = createPolicyLoader({
      adminRepo: config.adminRepo,
      handlers,
      logger,
      ...(cluster ? { missingFreshMs: 0 } : {}),
    });
    engine = createEngine({
      config,
      store,
      handlers,
      octokits,
      policies,
      logger,
      checkReporterFor: (octokit, deliveryId) => {
        const detailsUrl = detailsUrlFor(config, publicBase(), deliveryId);
        return createCheckReporter(octokit, { ...(detailsUrl ? { detailsUrl } : {}), appId: config.appId });
      },
      observe: {
        outcome: (handler, status, seconds) => metrics.handlerOutcome(handler, status, seconds),
        claimed: (seconds) => metrics.queueWait(seconds),
        handlerStart: (handler, state) => metrics.handlerStart(handler, state),
      },
      hardStop,
      ...(opts.startBackoff ? { startBackoff: opts.startBackoff } : {}),
      ...(opts.clock ? { clock: opts.clock } : {}),
      ...(opts.readinessProbes ? { readinessProbes: opts.readinessProbes } : {}),
    });
    const running0 = engine;
    metrics.setReadySource(() => running0.intake.ready());
    metrics.setPausedSource(async () =>
      (await listPauses(store.kv)).map(({ scope }) => ({
        scope: scope.kind,
        target:
          scope.kind === "handler" ? scope.handler : scope.kind === "installation" ? String(scope.installation) : "",
      })),
    );
    /** GitHub's count of the app's installations (GET /app): who may pause across all of them. */
    let installationCount: number | undefined;
    const consoleRoutes = mountConsole({
      config,
      store,
      depth: () => running0.intake.depth(),
      replay: (id) => running0.replay(id),
      handlers,
      handlerStarts: () => running0.handlerStarts(),
      budget,
      baseUrl: publicBase,
      policyOf: async (owner, repo) => {
        const app = await octokits.appOctokit();
        const { data } = await app.request("GET /repos/{owner}/{repo}/installation", { owner, repo });
        return policyView(await octokits.octokitFor(data.id), policies, owner, repo);
      },
      ...(cluster ? { replicas: cluster.replicas } : {}),
      installationCount: () => installationCount,
      pausesChanged: () => running0.pausesChanged(),
      logger,
    });
    const http = createStewardHttp({
      pages: withPages(
        consoleRoutes,
        probotRoutePages(handlers, logger, (app) => containment.scope(app, "a route")),
      ),
      webhookPath: config.webhookPath,
      secrets: config.webhookSecrets,
      intake: engine.intake,
      logger,
      metrics,
      timeouts: {
        ...(config.bodyTimeoutMs === undefined ? {} : { bodyTimeoutMs: config.bodyTimeoutMs }),
        ...opts.timeouts,
      },
      ...(config.bodyMinRate === undefined ? {} : { bodyMinRate: config.bodyMinRate }),
      ...(config.maxConnectionsPerAddress === undefined
        ? {}
        : { maxConnectionsPerPeer: config.maxConnectionsPerAddress }),
    });
    // Recover work a previous process left behind before taking new deliveries.
    await engine.start();
    const address = await listen(http.server, config.port, config.host);
    const url = urlOf(address, config.host);
    listening = url;
    const sweeper = startRedeliverySweeper({
      octokits,
      store: store.kv,
      isKnown: async (guid) => (await store.deliveries.getDelivery(guid)) !== undefined,
      logger,
      intervalMs: config.redeliverIntervalMs,
    });
    // Deliveries relayed through a smee-style channel enter by the webhook path, as GitHub's do.
    const proxy = config.webhookProxyUrl
      ? startWebhookProxy({
          source: config.webhookProxyUrl,
          target: `${url}${config.webhookPath}`,
          logger,
          ...(opts.proxyBackoff ? { backoff: opts.proxyBackoff } : {}),
        })
      : undefined;
    void checkAppCredential({
      octokits,
      appId: config.appId,
      apiUrl: config.apiUrl,
      logger,
      signal: stopping.signal,
      ...(opts.startBackoff ? { backoff: opts.startBackoff } : {}),
      observe: (state) => metrics.appCredential(state),
      installations: (count) => {
        installationCount = count;
        metrics.installations(count);
      },
    });
    const appRecheck = startPeriodic({
      name: "app credential check",
      intervalMs: APP_RECHECK_MS,
      firstDelayMs: APP_RECHECK_MS,
      logger,
      run: (signal) =>
        recheckAppCredential({
          octokits,
          signal,
          observe: (state) => metrics.appCredential(state),
          installations: (count) => {
            installationCount = count;
            metrics.installations(count);
          },
        }),
    });
    const running = engine;
    let closing: Promise<void> | undefined;
    return {
      url,
      server: http.server,
      engine: running,
      store,
      handlers,
      metrics,
      octokits,
      logger,
      close() {
        closing ??= (async () => {
          await proxy?.close();
          http.beginDrain();
          stopping.abort(new Error("shutting down"));
          logger.info({ timeoutMs: config.shutdownTimeoutMs }, "shutting down: new deliveries refused, finishing work");
          // Both told to stop at once: the bound is the shutdown timeout, not the sum of the two.
          await Promise.all([
            sweeper.stop(HTTP_CLOSE_GRACE_MS),
            appRecheck.stop(HTTP_CLOSE_GRACE_MS),
            running.stop(config.shutdownTimeoutMs),
          ]);
          consoleRoutes.close();
          await closeServer(http.server, HTTP_CLOSE_GRACE_MS);
          // Nothing of this process talks to the API after this line.
          hardStop.abort(new Error("shut down"));
          await timing.close();
          await budgetWrites.close();
          await store.close();
          await cluster?.close();
          containment.release();
          // The spans of the last runs leave before close resolves.
          await tracing?.flush().catch((e: unknown) => logger.warn({ err: e }, "traces not all exported"));
          await errorReporting?.flush(HTTP_CLOSE_GRACE_MS).catch(() => undefined);
          logger.info("shut down");
        })();
        return closing;
      },
    };
  } catch (error) {
    await engine?.stop(0).catch(() => undefined);
    await timing.close();
    await budgetWrites.close();
    await store.close();
    await cluster?.close();
    containment.release();
    throw error;
  }
}
