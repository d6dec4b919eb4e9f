// The one run path of a handler, for deliveries and tasks alike: the installation's Octokit,
// the call (whatever it throws or returns becomes an outcome), the redaction of its error, the
// metric and the log line. What differs (routing, policy, how the outcome is saved and
// retried) is in delivery.ts and task.ts.
import type { Logger } from "pino";
import type { InstallationOctokit, Outcome } from "../handler.js";
import type { StewardConfig } from "../config/types.js";
import type { OctokitFactory } from "../api/types.js";
import { errorText, scrub } from "../log/redact.js";
import { SpanStatusCode } from "@opentelemetry/api";
import { inSpan } from "../log/trace.js";
import { reportError } from "../log/errors.js";
import { delayedText, rateLimitedUntil } from "../api/rate-limit.js";

export interface RunObserver {
  outcome(handler: string, status: Outcome["status"], seconds: number): void;
  /** A delivery was claimed, `seconds` after it was due. */
  claimed?(seconds: number): void;
}

export interface RunPathDeps {
  config: StewardConfig;
  octokits: OctokitFactory;
  observe?: RunObserver;
}

/** Values of the configuration that must never reach a stored error or a log line. */
export function configSecrets(config: StewardConfig): string[] {
  return [config.privateKey, ...config.webhookSecrets, config.reviewerToken ?? ""];
}

/** The installation's Octokit, or the outcome every handler of the run ends with when there is none. */
export async function installationOctokit(
  deps: RunPathDeps,
  installationId: number | undefined,
): Promise<{ octokit: InstallationOctokit | undefined; failure?: Outcome }> {
  if (installationId === undefined) return { octokit: undefined };
  try {
    return { octokit: await deps.octokits.octokitFor(installationId) };
  } catch (e) {
    return {
      octokit: undefined,
      failure: { status: "failed", error: `no Octokit for installation ${installationId}: ${errorText(e)}` },
    };
  }
}

function isOutcome(value: unknown): value is Outcome {
  if (typeof value !== "object" || value === null) return false;
  const o = value as Record<string, unknown>;
  return (
    o.status === "done" ||
    (o.status === "skipped" && typeof o.reason === "string") ||
    (o.status === "failed" && typeof o.error === "string")
  );
}

export type HandlerRunResult =
  /** The handler ran to an outcome (a failure's error redacted). */
  | { stopped: false; outcome: Outcome; seconds: number }
  /** The work was told to stop and the handler failed because of it: not its failure, nothing to save. */
  | { stopped: true; outcome: Outcome };

/**
 * Runs one handler step `invoke` (a delivery's `handle`, a task's `onTask`, or an outcome decided
 * before it, such as a policy skip) and measures it. `wrap` runs around the call in its async
 * context (the API calls it makes are logged there).
 */
export async function runHandler(
  deps: RunPathDeps,
  run: {
    handler: string;
    log: Logger;
    signal: AbortSignal;
    wrap?: <T>(fn: () => Promise<T>) => Promise<T>;
    /** The handler's attempt on this delivery or task (its span's attribute). */
    attempt?: number;
  },
  invoke: () => Promise<Outcome | void> | Outcome,
): Promise<HandlerRunResult> {
  const attributes = { "steward.handler": run.handler, ...(run.attempt ? { "steward.attempt": run.attempt } : {}) };
  return inSpan(`handler ${run.handler}`, { attributes }, async (span) => {
    const result = await runHandlerStep(deps, run, invoke);
    span.setAttribute("steward.outcome", result.stopped ? "stopped" : result.outcome.status);
    // The error text is the redacted one stored with the outcome, bounded like it.
    if (result.outcome.status === "failed")
      span.setStatus({ code: SpanStatusCode.ERROR, message: result.outcome.error.slice(0, 500) });
    return result;
  });
}

async function runHandlerStep(
  deps: RunPathDeps,
  run: { handler: string; log: Logger; signal: AbortSignal; wrap?: <T>(fn: () => Promise<T>) => Promise<T> },
  invoke: () => Promise<Outcome | void> | Outcome,
): Promise<HandlerRunResult> {
  const started = performance.now();
  let thrown: { error: unknown } | undefined;
  const call = async (): Promise<Outcome> => {
    try {
      const result = await invoke();
      if (result === undefined) return { status: "done" };
      if (!isOutcome(result))
        return { status: "failed", error: "handler returned something that is not an outcome", retryable: false };
      return result;
    } catch (e) {
      const until = rateLimitedUntil(e);
      // GitHub's "not now" is not the handler's failure: no error report, and the retry waits for it.
      if (until)
        return {
          status: "failed",
          error: delayedText(e, until),
          notBefore: until,
        };
      thrown = { error: e };
      return { status: "failed", error: errorText(e) };
    }
  };
  let outcome = await (run.wrap ? run.wrap(call) : call());
  if (outcome.status === "failed") outcome = { ...outcome, error: scrub(outcome.error, configSecrets(deps.config)) };
  if (outcome.status === "failed" && run.signal.aborted) {
    run.log.info({ handler: run.handler }, `handler ${run.handler} stopped; it runs again from the queue`);
    return { stopped: true, outcome };
  }
  // What a handler threw is what it did not expect (an outcome it returned, it did).
  if (thrown) reportError(thrown.error, { what: "handler threw", tags: { handler: run.handler } });
  const seconds = (performance.now() - started) / 1000;
  deps.observe?.outcome(run.handler, outcome.status, seconds);
  const level = outcome.status === "failed" ? "warn" : "info";
  run.log[level]({ handler: run.handler, outcome, seconds }, `handler ${run.handler} ${outcome.status}`);
  return { stopped: false, outcome, seconds };
}
