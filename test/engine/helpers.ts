// Shared test scaffolding for the engine: a config, a silent logger, temp data dirs,
// deliveries built from real webhook example payloads, and small fakes of the two I/O
// boundaries the engine calls (Octokit factory, policy loader).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyPairSync, randomUUID } from "node:crypto";
import pino from "pino";
import { examples } from "../support/webhook-examples.js";
import type { StewardConfig } from "../../src/config/types.js";
import type { HandlerModule, InstallationOctokit } from "../../src/handler.js";
import { createEngine, type EngineOptions } from "../../src/engine/index.js";
import type { IncomingDelivery } from "../../src/store/records.js";
import type { LoadedPolicy, PolicyLoader } from "../../src/policy/types.js";
import type { OctokitFactory } from "../../src/api/types.js";

export const silent = pino({ level: "silent" });

let key: string | undefined;
/** A real RSA key (Probot signs app JWTs with it). */
export function privateKey(): string {
  key ??= generateKeyPairSync("rsa", { modulusLength: 2048 })
    .privateKey.export({ type: "pkcs1", format: "pem" })
    .toString();
  return key;
}

export function testConfig(overrides: Partial<StewardConfig> = {}): StewardConfig {
  return {
    appId: 12345,
    privateKey: "-----BEGIN RSA PRIVATE KEY-----\nnot-a-real-key\n-----END RSA PRIVATE KEY-----",
    webhookSecrets: ["test-webhook-secret"],
    webhookPath: "/api/github/webhooks",
    port: 0,
    host: "127.0.0.1",
    apiUrl: "http://127.0.0.1:9",
    logLevel: "silent",
    logFormat: "json",
    dataDir: ".steward",
    adminRepo: "acme/.github",
    handlerPaths: [],
    concurrency: 4,
    maxAttempts: 3,
    shutdownTimeoutMs: 1000,
    reviewerToken: undefined,
    syncIntervalMs: 3_600_000,
    redeliverIntervalMs: 60_000,
    statusUrl: undefined,
    ...overrides,
  };
}

export async function tempDir(): Promise<{ dir: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "steward-engine-"));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

type Example = { name: string; examples: Record<string, unknown>[] };

/** A real example payload of `event` (with `action` when given), as a fresh copy. */
export function examplePayload(event: string, action?: string): Record<string, any> {
  const group = (examples as unknown as Example[]).find((e) => e.name === event);
  const found = group?.examples.find((p) => action === undefined || p.action === action);
  if (!found) throw new Error(`no example payload for ${event}${action ? `.${action}` : ""}`);
  return structuredClone(found) as Record<string, any>;
}

export function deliveryOf(event: string, payload: Record<string, any>, id: string = randomUUID()): IncomingDelivery {
  const repo = payload.repository as { full_name?: string } | undefined;
  return {
    id,
    event,
    action: typeof payload.action === "string" ? payload.action : undefined,
    installationId: typeof payload.installation?.id === "number" ? payload.installation.id : undefined,
    repository: repo?.full_name,
    headers: {
      "x-github-event": event,
      "x-github-delivery": id,
      "x-hub-signature-256": "sha256=0000",
      "user-agent": "GitHub-Hookshot/test",
      "content-type": "application/json",
    },
    payload: JSON.stringify(payload),
    receivedAt: new Date(),
  };
}

/** Octokit factory fake: hands out a marker object per installation and counts requests. */
export function fakeOctokits(): OctokitFactory & { requested: number[] } {
  const requested: number[] = [];
  return {
    requested,
    async octokitFor(id) {
      requested.push(id);
      return { installationId: id } as unknown as InstallationOctokit;
    },
    async appOctokit() {
      return { app: true } as unknown as InstallationOctokit;
    },
  };
}

/** Policy loader fake: answers a fixed LoadedPolicy and records loads and invalidations. */
export function fakePolicies(
  answer: LoadedPolicy = { sections: {}, problems: [], sources: [], given: [] },
): PolicyLoader & {
  loads: string[];
  invalidated: string[];
  answer: LoadedPolicy;
} {
  const fake = {
    loads: [] as string[],
    invalidated: [] as string[],
    answer,
    async load(_octokit: InstallationOctokit, target: { owner: string; repo: string; ref?: string }) {
      fake.loads.push(`${target.owner}/${target.repo}${target.ref ? `@${target.ref}` : ""}`);
      return fake.answer;
    },
    async loadDocument() {
      return { value: undefined, problems: [], found: false };
    },
    invalidate(owner: string, repo: string) {
      fake.invalidated.push(`${owner}/${repo}`);
    },
  };
  return fake;
}

export const noChecks = () => ({
  report: async () => {
    throw new Error("checks are not used in this test");
  },
});

/** Polls `condition` until it holds (fails the test after `timeoutMs`: generous, as CI's 2 cores are shared). */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 25_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** An engine over `store` with test defaults: fakes at the I/O boundaries, short backoff and poll. */
export function testEngine(
  store: EngineOptions["store"],
  handlers: HandlerModule<any>[],
  overrides: Partial<Omit<EngineOptions, "store" | "handlers">> & { maxAttempts?: number; concurrency?: number } = {},
) {
  const { maxAttempts, concurrency, ...rest } = overrides;
  const config =
    overrides.config ??
    testConfig({ ...(maxAttempts ? { maxAttempts } : {}), ...(concurrency ? { concurrency } : {}) });
  return createEngine({
    store,
    handlers,
    octokits: fakeOctokits(),
    policies: fakePolicies(),
    logger: silent,
    checkReporterFor: noChecks,
    retry: { baseMs: 5, maxMs: 20 },
    pollMs: 20,
    ...rest,
    config,
  });
}
