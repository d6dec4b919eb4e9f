// Optional error reporting to Sentry (SENTRY_DSN, Probot's variable). @sentry/node is loaded only
// when the variable is set. Every event passes through the same scrubber as log lines before it
// leaves (log/redact.ts): registered secrets, the configuration's own and credential-shaped
// strings are masked wherever they were put (message, stack, tags). Sentry is used for errors
// only: no tracing, no OpenTelemetry provider of its own (Steward's is ops/tracing.ts), and none
// of its default integrations, which would patch modules and add request data.
import type { Logger } from "pino";
import { scrub } from "../log/redact.js";
import { setErrorReporter } from "../log/errors.js";
import { packageVersion } from "../package-root.js";

export interface ErrorReporting {
  /** Sends what is queued, waiting at most `timeoutMs`. */
  flush(timeoutMs: number): Promise<void>;
}

let started: Promise<ErrorReporting> | undefined;

/** The event as JSON, scrubbed, and back: whatever field a secret reached, it leaves masked. */
export function scrubEvent<T>(event: T, secrets: readonly string[]): T {
  return JSON.parse(scrub(JSON.stringify(event), secrets)) as T;
}

/** Starts reporting once per process when `dsn` is set; undefined otherwise. */
export async function startErrorReporting(
  dsn: string | undefined,
  opts: { logger: Logger; secrets: readonly string[] },
): Promise<ErrorReporting | undefined> {
  if (!dsn) return undefined;
  started ??= (async () => {
    const Sentry = await import("@sentry/node");
    Sentry.initWithoutDefaultIntegrations({
      dsn,
      release: `steward@${packageVersion()}`,
      enableOpenTelemetrySetup: false,
      enableRuntimeChannelInjection: false,
      // Breadcrumbs would collect console output and HTTP calls made before the error.
      maxBreadcrumbs: 0,
      beforeSend: (event) => scrubEvent(event, opts.secrets),
    });
    setErrorReporter((error, report) => {
      Sentry.withScope((scope) => {
        scope.setTag("steward.what", report.what);
        for (const [key, value] of Object.entries(report.tags ?? {})) {
          if (value !== undefined) scope.setTag(key, String(value));
        }
        if (error instanceof Error) Sentry.captureException(error);
        else Sentry.captureMessage(`${report.what}: ${String(error)}`, "error");
      });
    });
    opts.logger.info("errors reported to Sentry");
    return {
      flush: async (timeoutMs) => {
        await Sentry.flush(timeoutMs);
      },
    };
  })();
  return started;
}
