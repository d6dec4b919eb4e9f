// Each handler's start() runs in the background with backoff: the intake takes deliveries
// from the first second, and one handler that cannot start (the API is down, its own bug)
// neither stops the service nor the other handlers. Its state shows in logs and metrics.
import type { Logger } from "pino";
import type { HandlerModule, ServiceContext } from "../handler.js";
import { pause, retryUntilDone, type Backoff } from "../lifecycle/backoff.js";
import { runWithSignal } from "../lifecycle/abort-scope.js";

/** `paused`: the handler (or everything) is paused, and its start waits for the resume. */
export type StartState = "starting" | "paused" | "retrying" | "started" | "stopped";

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
  /**
   * Whether the handler is paused now: its start (background work of its own, often API calls)
   * is held like its deliveries and tasks, asked again every `holdMs`, and runs on the resume.
   */
  held?(handler: string): Promise<boolean>;
  holdMs?: number;
}): HandlerStarts {
  const states = new Map<string, HandlerStartStatus>();
  /** Waits while the handler is paused; false when shutdown came first. */
  async function heldUntilResumed(handler: string, status: HandlerStartStatus, log: Logger): Promise<boolean> {
    if (!opts.held) return true;
    let was: StartState | undefined;
    while (!opts.signal.aborted && (await opts.held(handler).catch(() => false))) {
      if (was === undefined) {
        was = status.state;
        status.state = "paused";
        opts.observe?.(handler, "paused");
        log.info(`handler ${handler} is paused: its start waits for the resume`);
      }
      await pause(opts.holdMs ?? 5_000, opts.signal);
    }
    if (was !== undefined && !opts.signal.aborted) {
      status.state = was;
      opts.observe?.(handler, was);
    }
    return !opts.signal.aborted;
  }
  const runs = opts.handlers
    .filter((h) => h.start)
    .map(async (h) => {
      const status: HandlerStartStatus = { handler: h.name, state: "starting", attempts: 0 };
      states.set(h.name, status);
      opts.observe?.(h.name, "starting");
      const log = opts.logger.child({ handler: h.name });
      const ctx = opts.contextFor(h, log);
      if (!(await heldUntilResumed(h.name, status, log))) {
        status.state = "stopped";
        opts.observe?.(h.name, status.state);
        return;
      }
      const ok = await retryUntilDone({
        signal: opts.signal,
        backoff: opts.backoff,
        run: async () => {
          // A pause taken while the start retries holds the next attempt too.
          if (!(await heldUntilResumed(h.name, status, log))) throw opts.signal.reason ?? new Error("stopped");
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
