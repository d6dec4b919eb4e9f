// Runs an existing Probot app behind Steward's durable intake: the app is loaded into a
// real Probot instance once, at load time (so an app Steward cannot host is refused before
// any delivery), and each delivery is handed to `probot.receive`. Whatever the app's
// listeners throw becomes the handler's `failed` outcome (and is retried). Routes the app
// mounts (`getRouter`, `app.route`) are served on Steward's server (probot-routes.ts).
import { Probot, ProbotOctokit, type ApplicationFunction } from "probot";
import { pino, type Logger } from "pino";
import type { HandlerModule } from "../handler.js";
import type { StewardConfig } from "../config/types.js";
import { attachMounts, routeMounter, STEWARD_OWN_PATHS } from "./probot-routes.js";
import { credentialsToApiOnly } from "../api/origin-guard.js";
import { countHostedRequests } from "./hosted-scope.js";

/**
 * Probot 12 and older exposed every REST namespace at the top of the octokit
 * (`octokit.issues.createComment`); Probot 13+ only under `.rest`. Apps written for the old
 * shape keep working when the same namespaces are also reachable at the top.
 */
function legacyNamespaces(octokit: object): Record<string, unknown> {
  return { ...((octokit as { rest?: Record<string, unknown> }).rest ?? {}) };
}
// Composed in as for Steward's own clients: the app's credentials go to the API origin only, and
// the requests it makes from a delivery are counted, so its run waits for those it did not await.
const LegacyOctokit = ProbotOctokit.plugin(legacyNamespaces, credentialsToApiOnly, countHostedRequests);

/** Probot 13's `addHandler` takes raw requests for every path, which would come before Steward's own: refused by name. */
function refuseAddHandler(name: string): never {
  throw new Error(
    `Probot app "${name}" called addHandler() to take raw HTTP requests; Steward serves Probot apps' routes only through getRouter(path) (an Express router under its own path)`,
  );
}

/** One getter for every context: one made per context would give each a hidden class of its own (decision 0024). */
function legacyGithub(this: { octokit: unknown }): unknown {
  return this.octokit;
}

/**
 * Probot <= 9 named the context's client `context.github` (later `context.octokit`); the
 * listener sees both names.
 */
function withLegacyContext<L extends (ctx: never) => unknown>(listener: L): L {
  return ((ctx: object) => {
    if (!("github" in ctx)) Object.defineProperty(ctx, "github", { get: legacyGithub });
    return listener(ctx as never);
  }) as unknown as L;
}

/** Probot <= 9's `app.log` was callable (`app.log("...")` logs at info) and a logger at once. */
function callableLog(logger: Logger): Logger {
  const info = (...args: unknown[]) => (logger.info as (...a: unknown[]) => void)(...args);
  return new Proxy(info, {
    get: (_t, key) => {
      // Probot logs through children of the logger it is given: they are callable too.
      if (key === "child")
        return (...args: Parameters<Logger["child"]>) => callableLog(logger.child(...args) as unknown as Logger);
      const value = (logger as unknown as Record<string | symbol, unknown>)[key];
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(logger) : value;
    },
  }) as unknown as Logger;
}

/**
 * The listeners' failure as its message and status only: Probot attaches the whole event (its
 * payload) to what it throws, and a log line or outcome must not carry a payload.
 */
function withoutEvent(error: unknown): Error {
  const errors = error instanceof AggregateError ? error.errors : [error];
  const message = errors.map((e) => (e instanceof Error ? e.message : String(e))).join("; ") || String(error);
  const clean = new Error(message);
  const status = (errors[0] as { status?: unknown } | undefined)?.status;
  if (typeof status === "number") Object.assign(clean, { status });
  if (errors[0] instanceof Error && errors[0].stack)
    clean.stack = `Error: ${message}\n${errors[0].stack.split("\n").slice(1).join("\n")}`;
  return clean;
}

function errorWithoutEvent(error: unknown): unknown {
  return pino.stdSerializers.err(withoutEvent(error));
}

/** Which events an app listens to, collected while it loads. */
interface Subscriptions {
  any: boolean;
  names: Set<string>;
}

function subscribed(subs: Subscriptions, name: string, action: unknown): boolean {
  return subs.any || subs.names.has(name) || (typeof action === "string" && subs.names.has(`${name}.${action}`));
}

export async function probotAppAsHandler(
  fn: ApplicationFunction,
  opts: { name: string; config: StewardConfig; logger: Logger },
): Promise<HandlerModule> {
  const probot = new Probot({
    appId: opts.config.appId,
    privateKey: opts.config.privateKey,
    secret: opts.config.webhookSecrets[0],
    baseUrl: opts.config.apiUrl,
    Octokit: LegacyOctokit,
    // Probot logs a listener's error with the event it failed on: only the error is kept (no payload in a log line).
    log: callableLog(
      opts.logger.child({ handler: opts.name }, { serializers: { err: errorWithoutEvent, event: () => undefined } }),
    ),
  });
  const subs: Subscriptions = { any: false, names: new Set() };
  const on = probot.on.bind(probot);
  const onAny = probot.onAny.bind(probot);
  probot.on = ((event: string | string[], listener: never) => {
    for (const e of Array.isArray(event) ? event : [event]) subs.names.add(e);
    return on(event as never, withLegacyContext(listener));
  }) as Probot["on"];
  probot.onAny = ((listener: never) => {
    subs.any = true;
    return onAny(withLegacyContext(listener));
  }) as Probot["onAny"];
  const routes = routeMounter(opts.name, [...STEWARD_OWN_PATHS, opts.config.webhookPath]);
  // Probot <= 10 offered `app.route(path)`; 11 and 12 the `getRouter(path)` load option.
  Object.assign(probot, { route: (path?: string) => routes.mount(path, "app.route()"), router: undefined });
  await probot.load(fn, {
    cwd: process.cwd(),
    addHandler: () => refuseAddHandler(opts.name),
    getRouter: (path?: string) => routes.mount(path, "getRouter()"),
  } as Parameters<Probot["load"]>[1]);

  const handler: HandlerModule = {
    name: opts.name,
    events: ["*"],
    async handle(ctx) {
      const action = (ctx.payload as { action?: unknown }).action;
      if (!subscribed(subs, ctx.name, action)) {
        return {
          status: "skipped",
          reason: `the app does not listen to ${typeof action === "string" ? `${ctx.name}.${action}` : ctx.name}`,
        };
      }
      try {
        await probot.receive({ id: ctx.deliveryId, name: ctx.name, payload: ctx.payload } as Parameters<
          Probot["receive"]
        >[0]);
      } catch (error) {
        throw withoutEvent(error);
      }
      return { status: "done" };
    },
  };
  attachMounts(handler, routes.mounts);
  return handler;
}
