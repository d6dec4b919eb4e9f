// Runs an existing Probot app behind Steward's durable intake: the app is loaded into a
// real Probot instance once, and each delivery is handed to `probot.receive`. Whatever
// the app's listeners throw becomes the handler's `failed` outcome (and is retried).
import { Probot, type ApplicationFunction } from "probot";
import type { Logger } from "pino";
import type { HandlerModule } from "../handler.js";
import type { StewardConfig } from "../config/types.js";

export function probotAppAsHandler(
  fn: ApplicationFunction,
  opts: { name: string; config: StewardConfig; logger: Logger },
): HandlerModule {
  let loading: Promise<Probot> | undefined;

  function instance(): Promise<Probot> {
    loading ??= (async () => {
      const probot = new Probot({
        appId: opts.config.appId,
        privateKey: opts.config.privateKey,
        secret: opts.config.webhookSecrets[0],
        baseUrl: opts.config.apiUrl,
        log: opts.logger.child({ handler: opts.name }),
      });
      await probot.load(fn, {
        cwd: process.cwd(),
        // Steward owns the HTTP server; apps that mount routes are not supported behind it.
        addHandler: () => {
          throw new Error(`Probot app "${opts.name}" tried to add an HTTP route; Steward does not serve app routes`);
        },
      });
      return probot;
    })();
    // A failed load is retried on the next delivery rather than cached forever.
    loading.catch(() => {
      loading = undefined;
    });
    return loading;
  }

  return {
    name: opts.name,
    events: ["*"],
    async handle(ctx) {
      const probot = await instance();
      await probot.receive({ id: ctx.deliveryId, name: ctx.name, payload: ctx.payload } as Parameters<Probot["receive"]>[0]);
      return { status: "done" };
    },
  };
}
