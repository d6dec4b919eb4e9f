// Runs an existing Probot app behind Steward's durable intake: the app is loaded into a
// real Probot instance once, at load time (so an app Steward cannot host is refused before
// any delivery), and each delivery is handed to `probot.receive`. Whatever the app's
// listeners throw becomes the handler's `failed` outcome (and is retried).
import { Probot, ProbotOctokit, type ApplicationFunction } from "probot";
import type { Logger } from "pino";
import type { HandlerModule } from "../handler.js";
import type { StewardConfig } from "../config/types.js";

/**
 * Probot 12 and older exposed every REST namespace at the top of the octokit
 * (`octokit.issues.createComment`); Probot 13+ only under `.rest`. Apps written for the old
 * shape keep working when the same namespaces are also reachable at the top.
 */
function legacyNamespaces(octokit: object): Record<string, unknown> {
  return { ...((octokit as { rest?: Record<string, unknown> }).rest ?? {}) };
}
const LegacyOctokit = ProbotOctokit.plugin(legacyNamespaces);

/** Route-mounting calls Probot apps make; Steward owns its HTTP server and serves none of them. */
function refuseRoutes(name: string, call: string): never {
  throw new Error(
    `Probot app "${name}" called ${call} to add HTTP routes; Steward does not serve routes for Probot apps (run the app's routes in a separate server)`,
  );
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
    log: opts.logger.child({ handler: opts.name }),
  });
  const subs: Subscriptions = { any: false, names: new Set() };
  const on = probot.on.bind(probot);
  const onAny = probot.onAny.bind(probot);
  probot.on = ((event: string | string[], listener: never) => {
    for (const e of Array.isArray(event) ? event : [event]) subs.names.add(e);
    return on(event as never, listener);
  }) as Probot["on"];
  probot.onAny = ((listener: never) => {
    subs.any = true;
    return onAny(listener);
  }) as Probot["onAny"];
  // Probot <= 12 offered `app.route()` and `getRouter`: refuse them by name while loading.
  Object.assign(probot, { route: () => refuseRoutes(opts.name, "app.route()"), router: undefined });
  await probot.load(fn, {
    cwd: process.cwd(),
    addHandler: () => refuseRoutes(opts.name, "addHandler()"),
    getRouter: () => refuseRoutes(opts.name, "getRouter()"),
  } as Parameters<Probot["load"]>[1]);

  return {
    name: opts.name,
    events: ["*"],
    async handle(ctx) {
      const action = (ctx.payload as { action?: unknown }).action;
      if (!subscribed(subs, ctx.name, action)) {
        return { status: "skipped", reason: `the app does not listen to ${typeof action === "string" ? `${ctx.name}.${action}` : ctx.name}` };
      }
      await probot.receive({ id: ctx.deliveryId, name: ctx.name, payload: ctx.payload } as Parameters<Probot["receive"]>[0]);
      return { status: "done" };
    },
  };
}
