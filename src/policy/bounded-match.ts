// Policy patterns against text Steward does not control (job logs of several MiB), with a hard
// deadline. re2js runs in time linear in the text, but that time is also proportional to the
// pattern's program (bounded at validation, see regex.ts): one call over a long text can still take
// seconds, and a call on the event loop cannot be interrupted. So the work runs in a worker thread
// that is terminated at its deadline; the event loop only waits for a message.
//
// The worker is plain CommonJS evaluated from a string and loads re2js by its resolved path: the
// same code runs under vitest, from sources through tsx and from the compiled dist/. It starts
// without the process's flags (loaders, --input-type), which are not for it.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { TextMatcher } from "./patterns.js";

/** Longest piece of one line a pattern is matched against (`^`/`$` are a piece's start and end). */
export const MAX_LINE_CHARS = 64 * 1024;
/** Most text one job hands to a worker (the end of the text is kept: errors print last). */
export const MAX_MATCH_TEXT_CHARS = 8 * 1024 * 1024;
/** Worker threads matching at once; more jobs wait their turn, in order. */
export const MAX_MATCH_WORKERS = 2;
/** Jobs waiting for a worker at most; past it a job fails at once instead of holding its text. */
export const MAX_QUEUED_MATCHES = 64;
/**
 * Work (characters × program instructions) small enough to match on the event loop directly: a
 * few milliseconds, less than handing the text to a worker costs.
 */
export const INLINE_WORK = 2_000_000;

export interface BoundedMatch {
  /** The matchers' sources that match some line of the text. */
  matched: Set<string>;
  /** Set when the job was stopped at its deadline before every matcher was decided: why. */
  stopped?: string;
  /** Time the job ran (waiting for a worker not counted). */
  ms: number;
}

/** Matches the lines of `text`; adds the sources that match to `matched`. */
function scanLines(
  text: string,
  matchers: readonly { source: string; test(line: string): boolean }[],
  matched: Set<string>,
): void {
  let pos = 0;
  while (pos < text.length && matched.size < matchers.length) {
    let end = text.indexOf("\n", pos);
    if (end === -1) end = text.length;
    end = Math.min(end, pos + MAX_LINE_CHARS);
    const line = text.slice(pos, end);
    for (const m of matchers) if (!matched.has(m.source) && m.test(line)) matched.add(m.source);
    pos = text[end] === "\n" ? end + 1 : end;
  }
}

/** The work a job costs, for choosing between the event loop and a worker. */
export function matchWork(text: string, matchers: readonly TextMatcher[]): number {
  return text.length * matchers.reduce((n, m) => n + 1 + m.size, 0);
}

/** Matches on the calling thread: only for work under INLINE_WORK (see matchWork). */
export function matchInline(text: string, matchers: readonly TextMatcher[]): Set<string> {
  const matched = new Set<string>();
  scanLines(text, matchers, matched);
  return matched;
}

const WORKER_SOURCE = (re2jsPath: string, maxLineChars: number) => `
"use strict";
const { parentPort } = require("node:worker_threads");
const { RE2JS } = require(${JSON.stringify(re2jsPath)});
const compiled = new Map();
function matcherOf(spec) {
  if (!spec.re2) return { source: spec.source, test: (line) => line.includes(spec.source) };
  const key = spec.re2.flags + "/" + spec.re2.source;
  let re = compiled.get(key);
  if (!re) {
    if (compiled.size >= 1000) compiled.clear();
    re = RE2JS.compile(spec.re2.source, spec.re2.flags);
    compiled.set(key, re);
  }
  return { source: spec.source, test: (line) => re.test(line) };
}
// scanLines, as above (written out: a transpiled function's text may call helpers the worker lacks).
function scanLines(text, matchers, matched) {
  let pos = 0;
  while (pos < text.length && matched.size < matchers.length) {
    let end = text.indexOf("\\n", pos);
    if (end === -1) end = text.length;
    end = Math.min(end, pos + ${maxLineChars});
    const line = text.slice(pos, end);
    for (const m of matchers) if (!matched.has(m.source) && m.test(line)) matched.add(m.source);
    pos = text[end] === "\\n" ? end + 1 : end;
  }
}
parentPort.on("message", ({ text, specs }) => {
  try {
    const matched = new Set();
    scanLines(text, specs.map(matcherOf), matched);
    parentPort.postMessage({ matched: [...matched] });
  } catch (e) {
    parentPort.postMessage({ error: String(e && e.message || e) });
  }
});
`;

let source: string | undefined;
function workerSource(): string {
  source ??= WORKER_SOURCE(createRequire(import.meta.url).resolve("re2js"), MAX_LINE_CHARS);
  return source;
}

interface Job {
  started?: number;
  text: string;
  specs: { source: string; re2?: { source: string; flags: number } }[];
  deadlineMs: number;
  what: string;
  resolve(r: BoundedMatch): void;
  reject(e: Error): void;
}

interface Slot {
  worker: Worker;
  job?: Job;
  timer?: NodeJS.Timeout;
}

const idle: Slot[] = [];
const busy = new Set<Slot>();
const queue: Job[] = [];

/** A worker for the next job: an idle one (its start cost is paid once), else a new one within the bound. */
function takeSlot(): Slot | undefined {
  const reused = idle.pop();
  if (reused) return reused;
  if (busy.size >= MAX_MATCH_WORKERS) return undefined;
  const slot: Slot = { worker: new Worker(workerSource(), { eval: true, execArgv: [] }) };
  slot.worker.on("message", (msg: { matched?: string[]; error?: string }) => {
    const job = finish(slot, true);
    if (!job) return;
    if (msg.error !== undefined) job.reject(new Error(`matching ${job.what} failed: ${msg.error}`));
    else job.resolve({ matched: new Set(msg.matched), ms: performance.now() - job.started! });
  });
  slot.worker.on("error", (err) => finish(slot, false)?.reject(new Error(`matching failed: ${err.message}`)));
  slot.worker.on("exit", () => finish(slot, false)?.reject(new Error("the matching worker exited")));
  // An idle worker does not keep the process alive; a job's deadline timer does while it runs.
  // (After the listeners: adding one refs the worker's port again.)
  slot.worker.unref();
  return slot;
}

/** Ends the slot's job; a worker that is healthy goes back to the idle list, any other is dropped. */
function finish(slot: Slot, healthy: boolean): Job | undefined {
  const job = slot.job;
  clearTimeout(slot.timer);
  slot.job = undefined;
  slot.timer = undefined;
  busy.delete(slot);
  const at = idle.indexOf(slot);
  if (at >= 0) idle.splice(at, 1);
  if (healthy) idle.push(slot);
  else void slot.worker.terminate().catch(() => undefined);
  setImmediate(pump);
  return job;
}

function pump(): void {
  while (queue.length > 0) {
    const slot = takeSlot();
    if (!slot) return;
    const job = queue.shift()!;
    busy.add(slot);
    slot.job = job;
    job.started = performance.now();
    slot.timer = setTimeout(() => {
      // Terminated, not asked: the loop inside the worker never looks at its messages.
      finish(slot, false);
      job.resolve({
        matched: new Set(),
        stopped: `matching ${job.what} was stopped at its bound of ${job.deadlineMs} ms`,
        ms: job.deadlineMs,
      });
    }, job.deadlineMs);
    slot.worker.postMessage({ text: job.text, specs: job.specs });
  }
}

/**
 * The matchers among `matchers` that match some line of `text` (see scanLines), decided within
 * `deadlineMs` of wall time once a worker takes the job. Small work is done at once on the calling
 * thread. At the deadline the worker is terminated (and replaced for the next job) and the result
 * says it was `stopped`: nothing is reported matched, so a caller deciding on a match fails closed.
 */
export function boundedMatch(
  text: string,
  matchers: readonly TextMatcher[],
  opts: { deadlineMs: number; what: string },
): Promise<BoundedMatch> {
  if (text.length > MAX_MATCH_TEXT_CHARS) text = text.slice(text.length - MAX_MATCH_TEXT_CHARS);
  if (matchers.length === 0) return Promise.resolve({ matched: new Set(), ms: 0 });
  if (matchWork(text, matchers) <= INLINE_WORK) {
    const start = performance.now();
    const matched = matchInline(text, matchers);
    return Promise.resolve({ matched, ms: performance.now() - start });
  }
  if (opts.deadlineMs <= 0)
    return Promise.resolve({
      matched: new Set(),
      stopped: `matching ${opts.what} was stopped: the delivery's matching time was spent`,
      ms: 0,
    });
  if (queue.length >= MAX_QUEUED_MATCHES)
    return Promise.reject(
      new Error(`matching ${opts.what}: ${queue.length} matching jobs are waiting already; try again later`),
    );
  return new Promise((resolve, reject) => {
    const specs = matchers.map((m) => ({ source: m.source, ...(m.re2 ? { re2: m.re2 } : {}) }));
    queue.push({ text, specs, deadlineMs: Math.ceil(opts.deadlineMs), what: opts.what, resolve, reject });
    pump();
  });
}
