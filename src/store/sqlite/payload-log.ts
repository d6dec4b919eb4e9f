// Payloads outside SQLite. A payload is most of what a delivery weighs (2-25 KB against a row of
// ~200 bytes), and in SQLite it was written three times: into the WAL, then by the checkpoint into
// the database file, with both synced; the checkpoint's copying and its hold on writers were the
// service's largest cost after the request itself. Here each payload is appended once to a segment
// file and the row keeps where (file, offset, length); the WAL then carries only small rows.
//
// Ordering gives the durability: a payload is written before the commit of the row that points at
// it (and at durability `power` synced in that commit, before SQLite's own sync), so a committed
// row always finds its bytes, and a crash in between leaves only unreferenced bytes at a file's end.
//
// Files are named after the process that writes them (host, pid, incarnation), so two processes
// never append to one file and a file is only collected once its writer has moved past it (a
// rolled file) or is gone. Collection, after a purge: a file nobody references goes; a file whose
// live payloads are a small part of it has them copied forward into the current file first.
import { closeSync, fdatasyncSync, fstatSync, mkdirSync, openSync, readdirSync, readSync, rmSync, write, writeSync, writevSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { PROCESS_OWNER, processOwnerGone } from "../../lifecycle/process-owner.js";
import { PageRelease, type AppendedPlace, type PageReleaseOptions } from "./page-release.js";

/** A file is rolled once it reaches this size. */
export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
/** A finished file whose live payloads are under this share of it is compacted (they move forward). */
const COMPACT_BELOW = 0.25;
/**
 * Writing into a file's existing pages costs a third of extending it (measured: 2.9 against 10 µs
 * for 22 KB on ext4), so the current file is filled with zeros ahead of the writer, a chunk at a
 * time, on libuv's threads rather than the event loop. Files smaller than a few chunks are not.
 */
const FILL_CHUNK = 1024 * 1024;
const FILL_AHEAD = 8 * FILL_CHUNK;
const ZEROS = Buffer.alloc(FILL_CHUNK);

interface Current {
  file: string;
  fd: number;
  /** Where the next payload goes. */
  size: number;
  /** How far fills (and appends past them) have reached. */
  zeroed: number;
  /** The range a fill is writing now: no payload may go there until it is done. */
  filling?: { from: number; to: number };
  /** Set when the file was rolled past or closed while a fill was running: it closes the descriptor. */
  closeWhenFilled?: boolean;
}

export interface PayloadRef {
  file: string;
  offset: number;
  length: number;
}

/** What a collection found and did, for the purge's log line and tests. */
export interface Collected {
  removed: number;
  /** Payloads copied forward out of sparse files. */
  moved: number;
  /** Sparse files left as they are because a payload in them could not be read. */
  kept: number;
}

export interface PayloadLogOptions {
  /** False: this process only reads (the CLI); appends throw. */
  writable: boolean;
  /** Sync each file's new bytes before the commit that refers to them (durability `power`). */
  sync?: boolean;
  segmentBytes?: number;
  /** How much of what was appended stays in the page cache (page-release.ts). */
  pageRelease?: PageReleaseOptions;
}

const SUFFIX = ".log";
const ownerTag = PROCESS_OWNER.replaceAll("/", "~");
/**
 * Files a log of this process rolled past or closed: finished though their owner lives. Kept for
 * the process, not the log, so a store opened again in the same process (the CLI, tests) collects them.
 */
const finishedHere = new Set<string>();

/** The owner (a PROCESS_OWNER) a file name says wrote it, or undefined for a name this log did not make. */
function ownerOf(file: string): string | undefined {
  if (!file.endsWith(SUFFIX)) return undefined;
  const parts = file.slice(0, -SUFFIX.length).split("~");
  return parts.length === 4 ? parts.slice(0, 3).join("/") : undefined;
}

/** Reads `length` bytes at `position` into `into`; fewer when the file ends first (the count read). */
export function readAt(fd: number, into: Buffer, position: number, length: number): number {
  let got = 0;
  while (got < length) {
    const n = readSync(fd, into, got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/** Writes `parts` one after another at `offset`, in one system call when it takes them all. */
function writeAll(fd: number, parts: Buffer[], offset: number): void {
  let written = parts.length === 1 ? writeSync(fd, parts[0]!, 0, parts[0]!.length, offset) : writevSync(fd, parts, offset);
  for (const part of parts) {
    let done = Math.min(written, part.length);
    written -= done;
    while (done < part.length) done += writeSync(fd, part, done, part.length - done, offset + done);
    offset += part.length;
  }
}

export class PayloadLog {
  readonly dir: string;
  readonly #writable: boolean;
  readonly #sync: boolean;
  readonly #segmentBytes: number;
  /** Open descriptors by file name: the current file (read and append) and files read from. */
  readonly #fds = new Map<string, number>();
  #current: Current | undefined;
  /** Files with a fill still running: their descriptor stays open until it ends. */
  readonly #filling = new Map<string, Current>();
  #idleWaiters: (() => void)[] = [];
  #number = 0;
  #unsynced = false;
  /** Tells this log's files from another log's in the same process. */
  readonly #instance = randomUUID().slice(0, 8);
  readonly #release: PageRelease;
  readonly #rollListeners: ((file: string) => void)[] = [];

  constructor(dir: string, opts: PayloadLogOptions) {
    this.dir = dir;
    this.#writable = opts.writable;
    this.#sync = opts.sync ?? false;
    this.#segmentBytes = opts.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    this.#release = new PageRelease((file) => this.#fds.get(file), opts.pageRelease);
  }

  get writable(): boolean {
    return this.#writable;
  }

  /** Writes `payload` at the end of the current file now; the caller commits the row that refers to it. */
  append(payload: string | Buffer): PayloadRef {
    const bytes = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
    const { file, offset } = this.#appendParts([bytes]);
    return { file, offset, length: bytes.length };
  }

  /**
   * As `append` for each of `payloads` (and its `heads[i]`, if given), one after another in one
   * write: the group commit appends the payloads of a turn's deliveries together, and the spool a
   * turn's frames, one system call rather than one each.
   */
  appendMany(payloads: Buffer[], heads?: Buffer[]): PayloadRef[] {
    let { file, offset } = this.#appendParts(heads ? payloads.flatMap((bytes, i) => [heads[i]!, bytes]) : payloads);
    return payloads.map((bytes, i) => {
      offset += heads?.[i]!.length ?? 0;
      const ref = { file, offset, length: bytes.length };
      offset += bytes.length;
      return ref;
    });
  }

  /** Writes `parts` one after another at the end of the current file; where the first went. */
  #appendParts(parts: Buffer[]): { file: string; offset: number } {
    if (!this.#writable) throw new Error("this store only reads payloads");
    let length = 0;
    for (const part of parts) length += part.length;
    if (!this.#current || this.#current.size >= this.#segmentBytes) this.#roll();
    const current = this.#current!;
    let offset = current.size;
    // Never into a range being filled: past it instead (the gap stays zeros no row refers to).
    const fill = current.filling;
    if (fill && offset < fill.to && offset + length > fill.from) offset = fill.to;
    try {
      writeAll(current.fd, parts, offset);
    } finally {
      // After a short or failed write (disk full) the range holds junk no row refers to: the next
      // payload goes after it, never over bytes a reader may still be given.
      current.size = offset + length;
      current.zeroed = Math.max(current.zeroed, current.size);
    }
    this.#unsynced = true;
    this.#release.appended(current.file, offset, current.size);
    this.#fillAhead(current);
    return { file: current.file, offset };
  }

  /** Where the next append goes: the current file's end, or the start of the file the first append makes. */
  position(): { file: string; offset: number } {
    if (this.#current) return { file: this.#current.file, offset: this.#current.size };
    return { file: this.#fileName(this.#number + 1), offset: 0 };
  }

  /** `file` and the files its writer made after it, in the order it made them (those in `dir` now). */
  static filesFrom(dir: string, file: string): string[] {
    const at = file.lastIndexOf("-");
    const number = Number(file.slice(at + 1, -SUFFIX.length));
    if (ownerOf(file) === undefined || at < 0 || !Number.isInteger(number)) return [];
    const writer = file.slice(0, at + 1);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return [];
    }
    return names
      .filter((f) => f.startsWith(writer) && f.endsWith(SUFFIX))
      .map((f) => ({ f, n: Number(f.slice(writer.length, -SUFFIX.length)) }))
      .filter(({ n }) => Number.isInteger(n) && n >= number)
      .sort((a, b) => a.n - b.n)
      .map(({ f }) => f);
  }

  #fillAhead(current: Current): void {
    if (current.filling || this.#segmentBytes < 4 * FILL_CHUNK) return;
    // A chunk ahead of the writer, so it does not catch up with the fill while it runs (it would
    // have to skip the range); the writer extends the file itself up to there meanwhile.
    const from = Math.max(current.zeroed, current.size + FILL_CHUNK);
    if (from - current.size >= FILL_AHEAD || from >= this.#segmentBytes) return;
    const to = Math.min(from + FILL_CHUNK, this.#segmentBytes);
    current.filling = { from, to };
    this.#filling.set(current.file, current);
    write(current.fd, ZEROS, 0, to - from, from, (error) => {
      current.filling = undefined;
      this.#filling.delete(current.file);
      if (this.#filling.size === 0) for (const resolve of this.#idleWaiters.splice(0)) resolve();
      if (current.closeWhenFilled) return closeSync(current.fd);
      // A failed fill (disk full) leaves the rest to plain appends, which report the error themselves.
      if (error) {
        current.zeroed = this.#segmentBytes;
        return;
      }
      current.zeroed = Math.max(current.zeroed, to, current.size);
      if (current === this.#current) this.#fillAhead(current);
    });
  }

  /** Resolves once no fill is running (the fill goes on as payloads come; tests wait for it between steps). */
  fillsDone(): Promise<void> {
    if (this.#filling.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Closes `fd` now, or when the fill writing to it ends (the number must not be reused meanwhile). */
  #closeFd(file: string, fd: number): void {
    const filling = this.#filling.get(file);
    if (filling) filling.closeWhenFilled = true;
    else closeSync(fd);
  }

  /** At durability `power`: the bytes appended since the last call reach the disk (called inside the commit). */
  syncAppended(): void {
    if (!this.#sync || !this.#unsynced || !this.#current) return;
    fdatasyncSync(this.#current.fd);
    this.#unsynced = false;
  }

  #roll(): void {
    if (this.#current) {
      this.syncAppended();
      finishedHere.add(this.#current.file);
    } else {
      mkdirSync(this.dir, { recursive: true });
    }
    const file = this.#fileName(++this.#number);
    // A new name each time (this incarnation's own): "wx+" refuses to reuse a file that exists.
    const fd = openSync(join(this.dir, file), "wx+");
    this.#fds.set(file, fd);
    this.#current = { file, fd, size: 0, zeroed: 0 };
    for (const listener of this.#rollListeners) listener(file);
  }

  /** `from` names the oldest payload still to be read back soon: its pages and later ones stay cached (page-release.ts). */
  holdPagesFrom(from: () => AppendedPlace | undefined): void {
    this.#release.holdFrom(from);
  }

  /** `listener` hears the name of each new file appends go to, before the first is written. */
  onRoll(listener: (file: string) => void): void {
    this.#rollListeners.push(listener);
  }

  #fileName(number: number): string {
    return `${ownerTag}~${this.#instance}-${number}${SUFFIX}`;
  }

  /** The payload `ref` points at, or undefined when its file or bytes are gone. */
  read(ref: PayloadRef): string | undefined {
    return this.readBytes(ref)?.toString("utf8");
  }

  /** As `read`, its bytes as stored (compaction copies them without decoding and encoding again). */
  readBytes(ref: PayloadRef): Buffer | undefined {
    const fd = this.#open(ref.file);
    if (fd === undefined) return undefined;
    const buffer = Buffer.allocUnsafe(ref.length);
    return readAt(fd, buffer, ref.offset, ref.length) === ref.length ? buffer : undefined;
  }

  #open(file: string): number | undefined {
    const open = this.#fds.get(file);
    if (open !== undefined) return open;
    // Only names this log makes: a row can never make it open anything else.
    if (ownerOf(file) === undefined || file.includes("..")) return undefined;
    try {
      const fd = openSync(join(this.dir, file), "r");
      this.#fds.set(file, fd);
      return fd;
    } catch {
      return undefined;
    }
  }

  /**
   * Files no writer will append to again: rolled by this process, or left by a process that is
   * gone. Never the current file, never a live process's.
   */
  finishedFiles(): { file: string; size: number }[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: { file: string; size: number }[] = [];
    for (const file of names) {
      const owner = ownerOf(file);
      if (owner === undefined || file === this.#current?.file) continue;
      if (!finishedHere.has(file) && (owner === PROCESS_OWNER || !processOwnerGone(owner))) continue;
      const fd = this.#open(file);
      if (fd !== undefined) out.push({ file, size: fstatSync(fd).size });
    }
    return out;
  }

  /** Whether a finished file with `liveBytes` still referenced is worth compacting. */
  static sparse(size: number, liveBytes: number): boolean {
    return liveBytes < size * COMPACT_BELOW;
  }

  /** Closes and deletes a file this log no longer appends to (never the current one). */
  remove(file: string): void {
    if (file === this.#current?.file) throw new Error(`payload-log file ${file} is in use`);
    const fd = this.#fds.get(file);
    if (fd !== undefined) this.#closeFd(file, fd);
    this.#fds.delete(file);
    finishedHere.delete(file);
    rmSync(join(this.dir, file), { force: true });
  }

  close(): void {
    if (this.#current) finishedHere.add(this.#current.file);
    for (const [file, fd] of this.#fds) this.#closeFd(file, fd);
    this.#fds.clear();
    this.#current = undefined;
  }
}
