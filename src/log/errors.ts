// Where Steward's own failures are reported beyond its log: an error reporter (Sentry, when
// SENTRY_DSN is set; ops/error-reporting.ts) registers here, and the places that see a failure
// nobody else is told about (a handler that threw, work parked as dead, the intake failing) report
// it. Nothing is registered by default: reporting is then a no-op.

export interface ErrorReport {
  /** What failed, short and fixed ("handler threw", "delivery parked as dead"). */
  what: string;
  /** Bounded labels: handler, event, delivery id. Never a payload or a credential. */
  tags?: Record<string, string | number | undefined>;
}

export type ErrorReporter = (error: unknown, report: ErrorReport) => void;

let reporter: ErrorReporter | undefined;

/** Installs the process's reporter (one per process: several services in one process share it). */
export function setErrorReporter(next: ErrorReporter | undefined): void {
  reporter = next;
}

/** Reports a failure; never throws and never waits. */
export function reportError(error: unknown, report: ErrorReport): void {
  if (!reporter) return;
  try {
    reporter(error, report);
  } catch {
    // Reporting is best effort: the failure is in the log already.
  }
}
