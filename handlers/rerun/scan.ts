// Log matching for `rerun.rules[].log`: a log is read line by line (`^`/`$` are a line's start and
// end, a pattern never spans lines), with long lines cut into pieces, so no single match sees more
// than MAX_LINE_CHARS. Matching a log runs in a worker thread stopped at the delivery's remaining
// matching time (src/policy/bounded-match.ts): the event loop is never held by it, and a log
// that could not be matched in time says so (`stopped`) for the decision to fail closed.
import {
  boundedMatch,
  INLINE_WORK,
  MAX_LINE_CHARS,
  matchInline,
  matchWork,
  textMatcher,
  type MatchBudget,
} from "../../src/index.js";

export { MAX_LINE_CHARS };

/** A log already matched: the log patterns (as written) that matched one of its lines. */
export interface ScannedLog {
  matched: ReadonlySet<string>;
  /** Why matching stopped before every pattern was decided (then `matched` is empty). */
  stopped?: string;
}

/**
 * The specs of `specs` that match some line of `log`, on the calling thread: only when that is
 * little work (short texts, as the stored tails a simulation replays); otherwise `stopped`.
 */
export function scanLogSync(log: string, specs: readonly string[]): ScannedLog {
  const matchers = [...new Set(specs)].map(textMatcher);
  if (matchWork(log, matchers) > INLINE_WORK) {
    return {
      matched: new Set(),
      stopped: `matching ${specs.length} log patterns against a ${log.length}-character log is more work than is done without a deadline`,
    };
  }
  return { matched: matchInline(log, matchers) };
}

/** The specs of `specs` that match some line of `log`, within what is left of the delivery's `budget`. */
export async function scanLog(log: string, specs: readonly string[], budget: MatchBudget): Promise<ScannedLog> {
  const matchers = [...new Set(specs)].map(textMatcher);
  const result = await boundedMatch(log, matchers, {
    deadlineMs: budget.remaining,
    what: `${specs.length} log patterns against a ${log.length}-character job log`,
  });
  budget.spend(result.ms);
  return result.stopped ? { matched: result.matched, stopped: result.stopped } : { matched: result.matched };
}
