// Test helpers for the service tests: a collecting logger, an in-memory DeliveryIntake,
// and a running HTTP surface on 127.0.0.1 with an ephemeral port.
import { Writable } from "node:stream";
import type { AddressInfo } from "node:net";
import type { DeliveryIntake } from "../../src/intake/delivery-intake.js";
import type { IncomingDelivery } from "../../src/store/records.js";
import type { StewardConfig } from "../../src/config/types.js";
import { createLogger } from "../../src/log/logger.js";
import { createMetrics, type Metrics } from "../../src/ops/metrics.js";
import { createStewardHttp, type ServerTimeouts, type ServiceServer } from "../../src/intake/server.js";
import { signBody } from "../../src/intake/signature.js";

export function collectingLogger(level = "debug") {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  const logger = createLogger({ level, format: "json", destination });
  return { logger, output: () => chunks.join("") };
}

export class MemoryIntake implements DeliveryIntake {
  readonly deliveries = new Map<string, IncomingDelivery>();
  failWith: Error | undefined;
  isReady = true;
  async record(delivery: IncomingDelivery): Promise<"recorded" | "duplicate"> {
    if (this.failWith) throw this.failWith;
    if (this.deliveries.has(delivery.id)) return "duplicate";
    this.deliveries.set(delivery.id, delivery);
    return "recorded";
  }
  async ready(): Promise<boolean> {
    return this.isReady;
  }
  async depth(): Promise<number> {
    return this.deliveries.size;
  }
}

export interface RunningHttp {
  url: string;
  port: number;
  intake: MemoryIntake;
  metrics: Metrics;
  surface: ServiceServer;
  output: () => string;
  close(): Promise<void>;
}

export async function startHttp(
  opts: {
    secrets?: string[];
    maxBodyBytes?: number;
    timeouts?: Partial<ServerTimeouts>;
    path?: string;
    /** The intake's admission limits (bytes and bodies in flight, body rate floor, connections per peer). */
    admission?: Pick<
      Parameters<typeof createStewardHttp>[0],
      "maxBytesInFlight" | "admissionLimits" | "bodyMinRate" | "maxConnectionsPerPeer"
    >;
  } = {},
): Promise<RunningHttp> {
  const intake = new MemoryIntake();
  const metrics = createMetrics({ defaultMetrics: false });
  const { logger, output } = collectingLogger();
  const surface = createStewardHttp({
    webhookPath: opts.path ?? "/api/github/webhooks",
    secrets: opts.secrets ?? ["test-secret"],
    intake,
    logger,
    metrics,
    maxBodyBytes: opts.maxBodyBytes,
    timeouts: opts.timeouts,
    ...opts.admission,
  });
  await new Promise<void>((resolve) => surface.server.listen(0, "127.0.0.1", resolve));
  const { port } = surface.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    intake,
    metrics,
    surface,
    output,
    close: () =>
      new Promise<void>((resolve) => {
        surface.server.closeAllConnections();
        surface.server.close(() => resolve());
      }),
  };
}

let counter = 0;
export function deliveryId(): string {
  counter += 1;
  return `0b9f5a00-0000-4000-8000-${String(counter).padStart(12, "0")}`;
}

export async function postDelivery(
  url: string,
  opts: {
    body: string;
    secret?: string;
    event?: string | null;
    id?: string | null;
    contentType?: string | null;
    signature?: string | null;
    path?: string;
  },
): Promise<{ status: number; body: { message?: string }; headers: Headers }> {
  const headers: Record<string, string> = {};
  if (opts.event !== null) headers["x-github-event"] = opts.event ?? "push";
  if (opts.id !== null) headers["x-github-delivery"] = opts.id ?? deliveryId();
  if (opts.contentType !== null) headers["content-type"] = opts.contentType ?? "application/json";
  const signature = opts.signature === undefined ? signBody(opts.secret ?? "test-secret", opts.body) : opts.signature;
  if (signature !== null) headers["x-hub-signature-256"] = signature;
  const res = await fetch(url + (opts.path ?? "/api/github/webhooks"), { method: "POST", headers, body: opts.body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {}, headers: res.headers };
}

/** A complete configuration for tests, pointing at `apiUrl`. */
export function testConfig(overrides: Partial<StewardConfig> & { privateKey: string }): StewardConfig {
  return {
    appId: 4242,
    webhookSecrets: ["test-secret"],
    webhookPath: "/api/github/webhooks",
    port: 0,
    host: "127.0.0.1",
    apiUrl: "http://127.0.0.1:9",
    logLevel: "debug",
    logFormat: "json",
    dataDir: "/nonexistent",
    adminRepo: ".github",
    handlerPaths: [],
    concurrency: 2,
    maxAttempts: 3,
    shutdownTimeoutMs: 5_000,
    reviewerToken: undefined,
    syncIntervalMs: 6 * 3_600_000,
    redeliverIntervalMs: 600_000,
    statusUrl: undefined,
    durability: "process",
    ...overrides,
  };
}
