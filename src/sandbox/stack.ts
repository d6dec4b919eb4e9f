// The sandbox stack: the hub plus Steward wired to it in one process (the no-credentials
// `steward start`, the demo and end-to-end tests).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import type { HandlerModule } from "../handler.js";
import { loadConfig } from "../config/env.js";
import type { StewardConfig } from "../config/types.js";
import { createSteward } from "../app.js";
import { createHub, type HubEnv, type HubHandle } from "./hub.js";
import type { Clock } from "../lifecycle/clock.js";

export interface SandboxStack {
  hub: HubHandle;
  steward: Awaited<ReturnType<typeof createSteward>>;
  /** Where Steward receives webhooks. */
  webhookUrl: string;
  config: StewardConfig;
  close(): Promise<void>;
}

export interface SandboxStackOptions {
  handlers?: HandlerModule<any>[];
  dataDir?: string;
  logger?: Logger;
  hub?: Parameters<typeof createHub>[0];
  port?: number;
  /** Extra environment for Steward's configuration (e.g. LOG_LEVEL). */
  env?: Record<string, string>;
}

/** Steward runs by the hub's clock: moving it (control API) moves Steward's time and its waiting tasks. */
export function hubClock(hub: HubHandle): Clock {
  const clock = hub.state.clock;
  return { now: () => clock.now(), onMove: (listener) => clock.onMove(listener) };
}

/**
 * Steward's environment against a hub: its app, secret, API and login, the release manager's
 * token as the reviewer's, and `env` over them. Also for a hub in another process (the bench's
 * end-to-end section), which sends its `env` and that token over.
 */
export function sandboxStewardEnv(
  hubEnv: HubEnv,
  reviewerToken: string,
  o: { dataDir: string; port?: number | undefined; env?: Record<string, string> | undefined },
): Record<string, string> {
  return {
    APP_ID: hubEnv.APP_ID,
    PRIVATE_KEY_PATH: hubEnv.PRIVATE_KEY_PATH,
    WEBHOOK_SECRET: hubEnv.WEBHOOK_SECRET,
    GITHUB_API_URL: hubEnv.GITHUB_API_URL,
    PORT: String(o.port ?? 0),
    HOST: "127.0.0.1",
    STEWARD_DATA_DIR: o.dataDir,
    STEWARD_ADMIN_REPO: ".github",
    STEWARD_REVIEWER_TOKEN: reviewerToken,
    GITHUB_CLIENT_ID: hubEnv.GITHUB_CLIENT_ID,
    GITHUB_CLIENT_SECRET: hubEnv.GITHUB_CLIENT_SECRET,
    LOG_LEVEL: "warn",
    ...(o.env ?? {}),
  };
}

/** The hub has no abuse detection to respect: no 1 s spacing between writes (unless `env` asks for it). */
export function sandboxApiOptions(env?: Record<string, string>): Pick<Parameters<typeof createSteward>[0], "api"> {
  return env?.STEWARD_WRITE_INTERVAL === undefined ? { api: { writeIntervalMs: 0 } } : {};
}

export async function startSandboxStack(opts: SandboxStackOptions = {}): Promise<SandboxStack> {
  const hub = await createHub(opts.hub);
  const ownDataDir = opts.dataDir ? undefined : await mkdtemp(join(tmpdir(), "steward-stack-"));
  try {
    const config = loadConfig(
      sandboxStewardEnv(hub.env, hub.control.userToken("release-manager"), {
        dataDir: opts.dataDir ?? ownDataDir!,
        port: opts.port,
        env: opts.env,
      }),
    );
    const steward = await createSteward({
      config,
      ...sandboxApiOptions(opts.env),
      ...(opts.handlers ? { handlers: opts.handlers } : {}),
      ...(opts.logger ? { logger: opts.logger } : {}),
      clock: hubClock(hub),
    });
    const webhookUrl = `${steward.url.replace(/\/$/, "")}${config.webhookPath}`;
    hub.control.setWebhookUrl(webhookUrl);
    return {
      hub,
      steward,
      webhookUrl,
      config,
      async close() {
        hub.control.setWebhookUrl(undefined);
        await steward.close();
        await hub.close();
        if (ownDataDir) await rm(ownDataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await hub.close();
    if (ownDataDir) await rm(ownDataDir, { recursive: true, force: true });
    throw err;
  }
}
