// Each handler's start() runs in the background with backoff: the intake takes deliveries
// from the first second, and one handler that cannot start (the API is down, its own bug)
// neither stops the service nor the other handlers. Its state shows in logs and metrics.
import type { Logger } from "pino";
import type { HandlerModule, ServiceContext } from "../handler.js";
import { retryUntilDone, type Backoff } from "../lifecycle/backoff.js";
import { runWithSignal } from "../lifecycle/abort-scope.js";

export type StartState = "starting" | "retrying" | "started" | "stopped";

export interface HandlerStartStatus {
  handler: string;
  state: StartState;
  attempts: number;
  lastError?: string;
}

export interface HandlerStarts {
  status(): HandlerStartStatus[];
  /** Resolves when every start succeeded or gave up at shutdown. */
  settled(): Promise<void>;
}

function statusOf(error: unknown): number | undefined {
  const s = (error as { status?: unknown })?.status;
  return typeof s === "number" ? s : undefined;
}

export function startHandlers(opts: {
  handlers: readonly HandlerModule<any>[];
  contextFor(handler: HandlerModule<any>, log: Logger): ServiceContext;
  signal: AbortSignal;
  logger: Logger;
  /** Error text safe to log (secrets removed). */
  describe(error: unknown): string;
  backoff?: Backoff;
  observe?(handler: string, state: StartState): void;
}): HandlerStarts {
  const states = new Map<string, HandlerStartStatus>();
  const runs = opts.handlers
    .filter((h) => h.start)
    .map(async (h) => {
      const status: HandlerStartStatus = { handler: h.name, state: "starting", attempts: 0 };
      states.set(h.name, status);
      opts.observe?.(h.name, "starting");
      const log = opts.logger.child({ handler: h.name });
      const ctx = opts.contextFor(h, log);
      const ok = await retryUntilDone({
        signal: opts.signal,
        backoff: opts.backoff,
        run: () => {
          status.attempts++;
          return runWithSignal(opts.signal, () => h.start!(ctx));
        },
        onFailure: (error, attempt, retryInMs) => {
          status.state = "retrying";
          status.lastError = opts.describe(error);
          opts.observe?.(h.name, "retrying");
          // A rejected app credential is reported once, by the credential check, naming what
          // to fix; every handler repeating it would blame the wrong thing.
          const level = statusOf(error) === 401 ? "debug" : "warn";
          log[level](
            { attempt, retryInMs, error: status.lastError },
            `handler ${h.name} could not start yet; retrying in the background`,
          );
        },
      });
      status.state = ok ? "started" : "stopped";
      opts.observe?.(h.name, status.state);
      if (ok) log.info({ attempts: status.attempts }, `handler ${h.name} started`);
    });
  const all = Promise.all(runs).then(() => undefined);
  return { status: () => [...states.values()].map((s) => ({ ...s })), settled: () => all };
}
