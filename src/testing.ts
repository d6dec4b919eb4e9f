// `steward/testing`: test a handler module from another package against the sandbox hub, the
// same way Steward's own tests do. The hub is a separate package (`@steward/sandbox-hub`, in the
// Steward checkout's packages/sandbox-hub) that production installs never carry, so its absence
// is one clear error from startSandboxStack instead of a resolution failure at import.
import type { HandlerOutcomeRecord } from "./store/records.js";
import type { SandboxStack } from "./sandbox/stack.js";
import type { TestingStackOptions } from "./sandbox/testing-stack.js";

export type { SandboxStack, SandboxStackOptions } from "./sandbox/stack.js";
export type { TestingStackOptions } from "./sandbox/testing-stack.js";
export type { HandlerOutcomeRecord } from "./store/records.js";

const HUB_PACKAGE = "@steward/sandbox-hub";

type StackModule = typeof import("./sandbox/testing-stack.js");

async function loadStack(): Promise<StackModule> {
  try {
    await import(HUB_PACKAGE);
  } catch (err) {
    if (
      (err as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND" &&
      String((err as Error).message).includes(HUB_PACKAGE)
    ) {
      throw new Error(
        `steward/testing needs the sandbox hub: npm install --save-dev <path to the Steward checkout>/packages/sandbox-hub`,
      );
    }
    throw err;
  }
  return import("./sandbox/testing-stack.js");
}

// Loaded with this module, not in the first test: importing Steward's service is most of a first
// start, and a test runner counts imports outside a test's timeout (vitest's 5 s default).
const loaded: { stack: StackModule } | { error: unknown } = await loadStack().then(
  (stack) => ({ stack }),
  (error: unknown) => ({ error }),
);

/**
 * The sandbox hub and a Steward wired to it in this process, with a scratch data directory removed
 * on `close()`. It runs exactly `handlers` (handler module objects) or `apps` (paths of Probot apps
 * or handler modules); the built-in handlers only when `builtins` names them (all of them when
 * neither `handlers` nor `apps` is given). The app is installed with the grant of its own app.yml:
 * `manifest`, else ./app.yml in the working directory, plus each app path's own app.yml; Steward's
 * app.yml when there is none. `hub.app` replaces the grant.
 */
export async function startSandboxStack(opts: TestingStackOptions = {}): Promise<SandboxStack> {
  if ("error" in loaded) throw loaded.error;
  return loaded.stack.startTestingStack(opts);
}

/**
 * A handler's final outcome on a delivery the hub sent (`hub.control.deliveries()[n].guid`):
 * waits while it is missing or `failed` with a retry to come, up to `timeoutMs`. `stack` is read
 * for its `steward` on every look, so a holder whose Steward was restarted passes itself.
 */
export async function outcomeOf(
  stack: Pick<SandboxStack, "steward">,
  deliveryId: string,
  handler: string,
  opts: { timeoutMs?: number } = {},
): Promise<HandlerOutcomeRecord> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  let last: HandlerOutcomeRecord | undefined;
  let status: string | undefined;
  for (;;) {
    const stored = await stack.steward.store.deliveries.getDelivery(deliveryId);
    last = stored?.outcomes.find((o) => o.handler === handler);
    status = stored?.delivery.status;
    // A failed outcome is final only once the delivery itself is dead (no retry left).
    if (last && (last.status !== "failed" || status === "dead")) return last;
    if (Date.now() > deadline) {
      throw new Error(
        `no final outcome of ${handler} on delivery ${deliveryId} after ${opts.timeoutMs ?? 60_000} ms (so far: ${last ? `${last.status}: ${last.detail ?? ""}` : "none"}, delivery ${status ?? "not recorded"})`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
