// The console assembled from Steward's configuration and parts (called by src/app.ts).
import type { Logger } from "pino";
import { stringify } from "yaml";
import type { StewardConfig } from "../config/types.js";
import type { HandlerModule } from "../handler.js";
import { generatedConfigFiles } from "../policy/schema.js";
import { ApiBudget, budgetRecorder } from "./budget.js";
import { createConsole, type ConsoleRoutes } from "./console.js";
import type { ConsoleDeps, ConsoleStore, HandlerStartView, PolicyView } from "./types.js";
import type { HandlerStartStatus } from "../engine/handler-starts.js";

export { ApiBudget, budgetRecorder };

/** The console's public base: STEWARD_STATUS_URL's origin, else where Steward listens. */
export function consoleBase(config: Pick<StewardConfig, "statusUrl">, listening: string | undefined): string {
  if (config.statusUrl) return new URL(config.statusUrl).origin;
  return listening ?? "http://127.0.0.1";
}

/**
 * Where a check run's "Details" link goes: the console's page of the delivery that made it.
 * Only with a public base (STEWARD_STATUS_URL), or against a hub on this machine (the sandbox):
 * an address Steward merely listens on means nothing to someone reading the check on GitHub.
 */
export function detailsUrlFor(
  config: Pick<StewardConfig, "statusUrl" | "apiUrl">,
  base: string,
  deliveryId: string | undefined,
): string | undefined {
  const local = /^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/|$)/.test(config.apiUrl);
  if (!config.statusUrl && !local) return undefined;
  return deliveryId ? `${base}/console/deliveries/${encodeURIComponent(deliveryId)}` : `${base}/console`;
}

function startViews(
  handlers: readonly HandlerModule<any>[],
  recorded: readonly HandlerStartStatus[],
): HandlerStartView[] {
  return handlers.map((h) => {
    const found = recorded.find((r) => r.handler === h.name);
    if (found) return { ...found };
    return { handler: h.name, state: h.start ? "not recorded" : "no start step", attempts: 0 };
  });
}

export function mountConsole(opts: {
  config: StewardConfig;
  store: ConsoleStore;
  depth(): Promise<number>;
  replay(id: string): Promise<void>;
  handlers: readonly HandlerModule<any>[];
  /** The engine's record of the handlers' starts. */
  handlerStarts?(): readonly HandlerStartStatus[];
  budget: ApiBudget;
  baseUrl(): string;
  policyOf?(owner: string, repo: string): Promise<PolicyView | undefined>;
  replicas?: ConsoleDeps["replicas"];
  installationCount?: ConsoleDeps["installationCount"];
  pausesChanged?: ConsoleDeps["pausesChanged"];
  logger: Logger;
}): ConsoleRoutes {
  const { config } = opts;
  const deps: ConsoleDeps = {
    store: opts.store,
    depth: opts.depth,
    replay: opts.replay,
    handlers: opts.handlers.map((h) => h.name),
    ...(opts.handlerStarts ? { handlerStarts: () => startViews(opts.handlers, opts.handlerStarts!()) } : {}),
    handlerConsoles: opts.handlers.flatMap((h) => (h.console ? [{ handler: h.name, console: h.console }] : [])),
    appId: config.appId,
    apiUrl: config.apiUrl,
    oauth: config.oauth,
    // Without its own secret, the key follows from the app's secrets: sessions survive restarts and replicas agree.
    sessionSecret: config.sessionSecret ?? `${config.oauth?.clientSecret ?? ""}\n${config.privateKey}`,
    baseUrl: opts.baseUrl,
    schemaJson: generatedConfigFiles(opts.handlers, (v) => stringify(v)).get("steward.schema.json")!,
    budget: opts.budget,
    ...(opts.policyOf ? { policyOf: opts.policyOf } : {}),
    ...(opts.replicas ? { replicas: opts.replicas } : {}),
    ...(opts.installationCount ? { installationCount: opts.installationCount } : {}),
    ...(opts.pausesChanged ? { pausesChanged: opts.pausesChanged } : {}),
    logger: opts.logger,
  };
  return createConsole(deps);
}
