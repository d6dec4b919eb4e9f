// Log matching for `rerun.rules[].log`: a log is read line by line (`^`/`$` are a line's start and
// end, a pattern never spans lines), with long lines cut into pieces, so no single match sees more
// than MAX_LINE_CHARS. Scanning yields to the event loop between slices, so a multi-MiB log never
// keeps `/healthz` or other deliveries waiting, and charges each slice to the delivery's budget.
import { MatchBudget } from "../../src/index.js";
import { textMatcher, type TextMatcher } from "../../src/index.js";

/** Longest piece of one line a pattern is matched against. */
export const MAX_LINE_CHARS = 64 * 1024;
/** Text matched between two yields to the event loop. */
const SLICE_CHARS = 256 * 1024;

/** A log already matched: the log patterns (as written) that matched one of its lines. */
export interface ScannedLog {
  matched: ReadonlySet<string>;
}

/** Matches the lines of `log` from `from` on until about SLICE_CHARS are read; returns where it stopped. */
function scanSlice(log: string, from: number, matchers: TextMatcher[], matched: Set<string>, sliceChars: number): number {
  let pos = from;
  const stop = Math.min(log.length, from + sliceChars);
  while (pos < stop && matched.size < matchers.length) {
    let end = log.indexOf("\n", pos);
    if (end === -1) end = log.length;
    end = Math.min(end, pos + MAX_LINE_CHARS);
    const line = log.slice(pos, end);
    for (const m of matchers) if (!matched.has(m.source) && m.test(line)) matched.add(m.source);
    pos = log[end] === "\n" ? end + 1 : end;
  }
  return matched.size < matchers.length ? pos : log.length;
}

/** The specs of `specs` that match some line of `log`, synchronously (small logs, pure callers). */
export function scanLogSync(log: string, specs: readonly string[]): Set<string> {
  const matchers = [...new Set(specs)].map(textMatcher);
  const matched = new Set<string>();
  scanSlice(log, 0, matchers, matched, log.length + 1);
  return matched;
}

/** The specs of `specs` that match some line of `log`, in budgeted slices with yields in between. */
export async function scanLog(log: string, specs: readonly string[], budget: MatchBudget): Promise<ScannedLog> {
  const matchers = [...new Set(specs)].map(textMatcher);
  const matched = new Set<string>();
  let pos = 0;
  while (pos < log.length) {
    const from = pos;
    pos = budget.charge(`matching ${specs.length} log patterns against a ${log.length}-character job log`, () => scanSlice(log, from, matchers, matched, SLICE_CHARS));
    if (pos < log.length) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return { matched };
}
