// The payload log's bytes are read back once, moments after they are written (a claim), and then
// seldom (the console, a replay). Left in the page cache they grow it by every byte the service
// records, and a new page-cache page is not free: on a VM whose idle memory goes back to the host
// each one is a host fault (measured here: a 14.5 KB append 7-8 µs while pages are reused, 30-50 µs
// while the cache grows). So the log lets go of pages well behind its writer: the newest
// `keepBytes` stay cached (a backlog of some 18,000 average deliveries at the default), older
// ones are written back and dropped, and new appends land in pages the kernel just freed. Pages
// queued deliveries will still read are held past that (holdFrom), within a bound.
//
// Dropping is advice (posix_fadvise DONTNEED): the kernel never drops a dirty page, so nothing is
// lost, and a page read again later is simply read from disk. Pages a step behind the writer are
// advised once to start their writeback, so by the time they are `keepBytes` behind they are clean
// and the second advice drops them.
//
// Advice is a system call that waits for work: on dirty pages it submits their writeback, 170-220
// µs a MiB measured on this ext4 (the writes between two of them take 5-20 µs), once every 40-50
// deliveries of 22 KB. On the event loop that stalled the answer of whichever delivery came next.
// So where the store has a thread of its own the advice is given there (`elsewhere`), on a
// descriptor the thread opens by path; the loop only works out the ranges.
import { createRequire } from "node:module";

const PAGE = 4096;
/** Bytes of recent payloads kept in the page cache by default. */
export const DEFAULT_KEEP_BYTES = 256 * 1024 * 1024;
/** Advice is given each time this many bytes more were appended. */
export const DEFAULT_STEP_BYTES = 1024 * 1024;
/** Bytes kept at most while queued deliveries still need their payloads (holdFrom). */
export const DEFAULT_MAX_HOLD_BYTES = 1024 * 1024 * 1024;
const DONTNEED = 4;

type Advise = (fd: number, offset: number, length: number, advice: number) => number;

/** posix_fadvise through the `fadvise` addon; undefined where it is missing or failed to build (nothing is released). */
function loadAdvise(): Advise | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const addon = createRequire(import.meta.url)("fadvise") as { posix_fadvise: Advise; failed_to_load?: boolean };
    return addon.failed_to_load ? undefined : addon.posix_fadvise;
  } catch {
    return undefined;
  }
}

const systemAdvise = loadAdvise();

/** Whether this platform lets cached pages go (Linux with the addon built). */
export const pageReleaseAvailable = systemAdvise !== undefined;

/** Where another thread loads the addon from, when this one could. */
export function adviseAddonPath(): string | undefined {
  return pageReleaseAvailable ? createRequire(import.meta.url).resolve("fadvise") : undefined;
}

/** Bytes appended to one file, oldest first. */
interface Span {
  file: string;
  from: number;
  to: number;
}

export interface PageReleaseOptions {
  keepBytes?: number;
  stepBytes?: number;
  /** Past `keepBytes`, pages a hold keeps stay cached up to this many bytes behind the writer. */
  maxHoldBytes?: number;
  /** For tests: observes each piece of advice given. */
  advise?: Advise;
  /**
   * Gives DONTNEED advice over `length` bytes of `file` at `offset` off the event loop; false when
   * it cannot (its thread is gone), and the advice is then given here.
   */
  elsewhere?: (file: string, offset: number, length: number) => boolean;
}

/** A place in the appended bytes: a file and an offset in it. */
export interface AppendedPlace {
  file: string;
  offset: number;
}

export class PageRelease {
  readonly #fdOf: (file: string) => number | undefined;
  readonly #keep: number;
  readonly #step: number;
  readonly #advise: Advise | undefined;
  readonly #elsewhere: PageReleaseOptions["elsewhere"];
  readonly #spans: Span[] = [];
  readonly #maxHold: number;
  #holdFrom: (() => AppendedPlace | undefined) | undefined;
  /** Positions in the stream of all bytes appended (across files): appended, advised to write back, dropped. */
  #total = 0;
  #flushed = 0;
  #dropped = 0;
  /** Where the first span starts in the stream. */
  #firstAt = 0;

  constructor(fdOf: (file: string) => number | undefined, opts: PageReleaseOptions = {}) {
    this.#fdOf = fdOf;
    this.#step = Math.max(PAGE, opts.stepBytes ?? DEFAULT_STEP_BYTES);
    this.#keep = Math.max(2 * this.#step, opts.keepBytes ?? DEFAULT_KEEP_BYTES);
    this.#maxHold = Math.max(this.#keep, opts.maxHoldBytes ?? DEFAULT_MAX_HOLD_BYTES);
    this.#advise = opts.advise ?? systemAdvise;
    this.#elsewhere = opts.elsewhere;
  }

  /** Records that `file` now holds appended bytes up to `to` (from `from`), advising as the stream passes each step. */
  appended(file: string, from: number, to: number): void {
    if (!this.#advise) return;
    const last = this.#spans.at(-1);
    if (last && last.file === file && from >= last.to) {
      this.#total += to - last.to;
      last.to = to;
    } else {
      this.#spans.push({ file, from, to });
      this.#total += to - from;
    }
    if (this.#total - this.#flushed < 2 * this.#step) return;
    // Up to a step behind the writer, so a page being appended to is never under writeback.
    const flushTo = this.#total - this.#step;
    this.#adviseRange(this.#flushed, flushTo);
    this.#flushed = flushTo;
    const dropTo = this.#heldBack(this.#total - this.#keep);
    if (dropTo <= this.#dropped) return;
    this.#adviseRange(this.#dropped, dropTo);
    this.#dropped = dropTo;
    // Spans wholly dropped are done with.
    while (this.#spans.length > 1 && this.#firstAt + (this.#spans[0]!.to - this.#spans[0]!.from) <= dropTo) {
      const first = this.#spans.shift()!;
      this.#firstAt += first.to - first.from;
    }
  }

  /**
   * `from` says where the oldest payload still to be read is (a queued delivery's): pages from
   * there on are not dropped, up to `maxHoldBytes` behind the writer. During a flood the backlog's
   * payloads are read back long after they were written, further behind than `keepBytes`; dropped,
   * each would be read from the disk while the event loop waits (measured: a backlog of 11,000
   * deliveries worked off 10% slower, a read 100 us against a few).
   */
  holdFrom(from: () => AppendedPlace | undefined): void {
    this.#holdFrom = from;
  }

  /** `dropTo`, or less where the hold keeps pages (never less than `maxHoldBytes` behind the writer). */
  #heldBack(dropTo: number): number {
    const place = this.#holdFrom?.();
    if (!place) return dropTo;
    let at = this.#firstAt;
    for (const span of this.#spans) {
      if (span.file === place.file && place.offset >= span.from && place.offset < span.to) {
        return Math.max(this.#total - this.#maxHold, Math.min(dropTo, at + place.offset - span.from));
      }
      at += span.to - span.from;
    }
    return dropTo;
  }

  /** Advises DONTNEED over stream positions [from, to): pages wholly inside are dropped when clean, written back when dirty. */
  #adviseRange(from: number, to: number): void {
    let at = this.#firstAt;
    for (const span of this.#spans) {
      const length = span.to - span.from;
      const spanEnd = at + length;
      if (spanEnd > from && at < to) {
        // In file offsets, each end rounded down to a page: successive ranges then meet exactly
        // and the page holding a boundary is covered by the next range, never skipped.
        const start = span.from + Math.max(0, from - at);
        const end = span.from + Math.min(length, to - at);
        const first = start - (start % PAGE);
        const last = end === span.to && spanEnd <= to ? end : end - (end % PAGE);
        if (last > first && !this.#elsewhere?.(span.file, first, last - first)) {
          const fd = this.#fdOf(span.file);
          if (fd !== undefined) this.#advise!(fd, first, last - first, DONTNEED);
        }
      }
      at = spanEnd;
      if (at >= to) break;
    }
  }
}
