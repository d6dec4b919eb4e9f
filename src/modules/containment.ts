// Hosted code is contained: what a handler module or Probot app does outside the work Steward
// awaits (a promise nobody awaits, a timer or an emitter that throws) is attributed to the module
// by its name, logged once, counted against the delivery or task it was working for, and stops
// nothing else. Each module's load, start, delivery runs, tasks and routes run in a hosted scope
// (lifecycle/hosted-scope.ts); the process's 'unhandledRejection' and 'uncaughtException'
// listeners read that scope to know whose error it is.
//
// Outside every module's work:
// - an unhandled rejection is logged at error as "unattributed" and the service goes on: a
//   rejection leaves no half-done state behind it (the code that awaited nothing has ended);
// - an uncaught exception keeps Node's own behaviour: the error on stderr and exit 1. It may
//   have interrupted Steward's own code half-way; a restart recovers the work from the store.
// A process that has other listeners for these (a test runner, an application embedding
// Steward) leaves the unattributed ones to them.
import type { Logger } from "pino";
import type { HandlerContext, HandlerModule, Outcome, ServiceContext, TaskContext } from "../handler.js";
import { currentHosted, runHosted, type FaultKind, type HostedRun } from "./hosted-scope.js";
import { errorText, scrub } from "../log/redact.js";
import { carryMounts } from "./probot-routes.js";

export interface Containment {
  /** A scope of `module`'s work outside deliveries and tasks (loading, starting, a route). */
  scope(module: string, during: string): HostedRun;
  /** The handlers, each run in its own scope; faults of a delivery's or task's run fail that run. */
  contain(
    handlers: readonly HandlerModule<any>[],
    opts?: { builtin?: readonly HandlerModule<any>[] },
  ): HandlerModule<any>[];
  /** This service no longer logs the unattributed faults of the process. */
  release(): void;
}

/** Longest a run waits, once its module returned, for the requests it made and did not await. */
export const SETTLE_MS = 30_000;
/** Fault lines per module per minute; the ones past it are counted in the next line. */
const LINES_PER_MINUTE = 20;

function firstFrame(error: unknown): string | undefined {
  const stack = (error as { stack?: unknown })?.stack;
  if (typeof stack !== "string") return undefined;
  return /^\s+at (.+)$/m.exec(stack)?.[1]?.slice(0, 300);
}

function describe(error: unknown, secrets: readonly string[]): string {
  const name =
    error instanceof Error && error.name !== "Error" && !errorText(error).startsWith(error.name)
      ? `${error.name}: `
      : "";
  return scrub(`${name}${errorText(error)}`, secrets).slice(0, 2_000);
}

// ---- the process's listeners (one set per process, whichever services run in it) ----

let installed = false;
/** Loggers of the services running in this process, the latest last: unattributed faults go to it. */
const services: Logger[] = [];

function onRejection(reason: unknown): void {
  const run = currentHosted();
  if (run) return run.fault(reason, "unhandled rejection");
  if (process.listenerCount("unhandledRejection") > 1) return;
  const log = services[services.length - 1];
  const fields = { error: describe(reason, []), at: firstFrame(reason) };
  if (log)
    log.error(fields, "unattributed unhandled rejection (outside every hosted module's work); Steward keeps serving");
  else process.stderr.write(`steward: unattributed unhandled rejection: ${fields.error}\n`);
}

function onException(error: unknown): void {
  const run = currentHosted();
  if (run) return run.fault(error, "uncaught exception");
  if (process.listenerCount("uncaughtException") > 1) return;
  // Node's own behaviour for an uncaught exception.
  process.stderr.write(`${scrub(String((error as { stack?: unknown })?.stack ?? error))}\n`);
  process.exit(1);
}

function listen(): void {
  if (installed) return;
  installed = true;
  process.on("unhandledRejection", onRejection);
  process.on("uncaughtException", onException);
}

// ---- one service's containment ----

export function createContainment(opts: { logger: Logger; secrets: readonly string[] }): Containment {
  listen();
  services.push(opts.logger);
  const log = opts.logger.child({ component: "containment" });
  const budget = new Map<string, { since: number; lines: number; dropped: number }>();

  function report(
    run: { module: string; during: string; deliveryId?: string },
    error: unknown,
    kind: FaultKind,
    late: boolean,
  ): string {
    const text = describe(error, opts.secrets);
    const now = Date.now();
    let b = budget.get(run.module);
    if (!b || now - b.since >= 60_000) {
      const dropped = b?.dropped ?? 0;
      b = { since: now, lines: 0, dropped };
      budget.set(run.module, b);
    }
    if (b.lines >= LINES_PER_MINUTE) {
      b.dropped++;
      return text;
    }
    b.lines++;
    const dropped = b.dropped;
    b.dropped = 0;
    log.error(
      {
        handler: run.module,
        during: run.during,
        ...(run.deliveryId ? { delivery: run.deliveryId } : {}),
        error: text,
        at: firstFrame(error),
        ...(dropped > 0 ? { notLogged: dropped } : {}),
      },
      `hosted module ${run.module}: ${kind} outside its awaited work (${run.during}${late ? ", after its run ended" : ""}); contained, Steward keeps serving`,
    );
    return text;
  }

  function scope(module: string, during: string): HostedRun {
    return { module, during, fault: (error, kind) => void report({ module, during }, error, kind, false) };
  }

  /** The scope of one delivery's or task's run: faults while it is open fail it. */
  function runScope(module: string, during: string, deliveryId: string | undefined) {
    const faults: string[] = [];
    let open = true;
    const pending = new Set<Promise<unknown>>();
    const run: HostedRun = {
      module,
      during,
      ...(deliveryId ? { deliveryId } : {}),
      pending,
      fault(error, kind) {
        const text = report(run, error, kind, !open);
        if (open) faults.push(`${kind}: ${text}`);
      },
    };
    return {
      run,
      /** Waits for the requests the run left unawaited (bounded), then for Node to report what nobody handled. */
      async settle(settleRequests: boolean, signal: AbortSignal): Promise<void> {
        if (settleRequests) {
          const deadline = Date.now() + SETTLE_MS;
          while (pending.size > 0 && !signal.aborted && Date.now() < deadline) {
            let timer: NodeJS.Timeout | undefined;
            await Promise.race([
              Promise.allSettled([...pending]),
              new Promise((resolve) => (timer = setTimeout(resolve, Math.max(1, deadline - Date.now())))),
            ]);
            clearTimeout(timer);
          }
        }
        // Rejections nobody handled are reported once the microtasks ran: before the next turn's immediates.
        await new Promise((resolve) => setImmediate(resolve));
      },
      close(): string[] {
        open = false;
        pending.clear();
        return faults;
      },
    };
  }

  function failedBy(module: string, faults: string[]): Outcome {
    const more = faults.length > 1 ? ` (and ${faults.length - 1} more)` : "";
    return { status: "failed", error: `${module}: ${faults[0]}, outside its awaited run${more}`, retryable: true };
  }

  function containOne(h: HandlerModule<any>, settles: boolean): HandlerModule<any> {
    // One delivery's or task's run in the module's scope: what escaped it while open fails the run.
    const inRun = async <T>(
      what: string,
      deliveryId: string | undefined,
      signal: AbortSignal,
      work: () => Promise<T>,
    ): Promise<T | Outcome> => {
      const s = runScope(h.name, what, deliveryId);
      try {
        const outcome = await runHosted(s.run, work);
        if (settles) await s.settle(true, signal);
        const faults = s.close();
        return faults.length > 0 ? failedBy(h.name, faults) : outcome;
      } finally {
        s.close();
      }
    };
    // Its own properties as they are, the rest (a module built by a class) through its prototype.
    const wrapped: HandlerModule<any> = Object.assign(Object.create(h) as HandlerModule<any>, h, {
      handle: (ctx: HandlerContext<any, any>) =>
        inRun(`delivery ${ctx.deliveryId}`, ctx.deliveryId, ctx.signal, () => h.handle(ctx)),
    });
    if (h.onTask) {
      const onTask = h.onTask.bind(h);
      wrapped.onTask = (ctx: TaskContext<any>) => inRun(`task ${ctx.key}`, undefined, ctx.signal, () => onTask(ctx));
    }
    if (h.start) {
      const start = h.start.bind(h);
      const starting = scope(h.name, "starting");
      wrapped.start = (ctx: ServiceContext) => runHosted(starting, () => start(ctx));
    }
    carryMounts(h, wrapped);
    return wrapped;
  }

  return {
    scope,
    contain(handlers, o = {}) {
      const builtin = new Set(o.builtin ?? []);
      // Steward's own modules are attributed too, without the wait for unawaited requests (they await theirs).
      return handlers.map((h) => containOne(h, !builtin.has(h)));
    },
    release() {
      const i = services.lastIndexOf(opts.logger);
      if (i >= 0) services.splice(i, 1);
    },
  };
}
