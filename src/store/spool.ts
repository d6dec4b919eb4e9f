// The intake spool: while deliveries flood in, the SQLite store makes each one durable against a
// crash of the process with one positioned write into a preallocated file and lets the intake
// answer, then moves what was spooled into SQLite in batches a few milliseconds later. A commit
// per delivery costs a dozen WAL frames (the row, its indexes, the body's overflow pages), each two
// writes; a batch shares the index pages and the commit. The file is a ring, filled with zeros when
// first used, so writes never extend it: a frame goes after the last one, or at the start once the
// frames there have been moved.
//
// Frames: magic, body length, sequence number, CRC-32 of the body, then the body (the delivery's
// fields as JSON, a newline, the payload). With the payload log, the payload was appended there
// first and the frame holds only its place (`ref`): a payload is written once, and the move into
// SQLite writes rows only. The store records, in the commit that moves a batch, the
// highest number moved; after a crash every whole frame in the file numbered above it is one that
// was answered and not yet moved, and is moved then, in number order.
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { crc32 } from "node:zlib";
import type { IncomingDelivery } from "../intake/delivery-intake.js";
import type { PayloadRef } from "./payload-log.js";

const MAGIC = 0x31575053;
const HEADER_BYTES = 20;
/** Room for a flood's backlog before the store commits deliveries one by one again. */
export const DEFAULT_SPOOL_BYTES = 32 * 1024 * 1024;

export interface SpooledDelivery {
  seq: number;
  delivery: IncomingDelivery;
  /** Where the payload is in the payload log, when it is there rather than in the frame (`delivery.payload` is then empty). */
  ref?: PayloadRef;
}

interface FrameMeta {
  id: string;
  event: string;
  action?: string;
  installationId?: number;
  repository?: string;
  receivedAt: number;
  headers: Record<string, string>;
  ref?: PayloadRef;
  /** Recorded done: no handler takes it. */
  settled?: true;
}

/** One frame holding `delivery` (its parsed tree, if any, is not kept), its payload or, with `ref`, the payload's place in the log. */
export function encodeFrame(seq: number, d: IncomingDelivery, ref?: PayloadRef): Buffer {
  const meta: FrameMeta = { id: d.id, event: d.event, receivedAt: d.receivedAt.getTime(), headers: d.headers };
  if (d.action !== undefined) meta.action = d.action;
  if (d.installationId !== undefined) meta.installationId = d.installationId;
  if (d.repository !== undefined) meta.repository = d.repository;
  if (ref) meta.ref = ref;
  if (d.settled) meta.settled = true;
  const head = `${JSON.stringify(meta)}\n`;
  const payload = ref ? "" : d.payload;
  const headBytes = Buffer.byteLength(head);
  const bodyBytes = headBytes + Buffer.byteLength(payload);
  const frame = Buffer.allocUnsafe(HEADER_BYTES + bodyBytes);
  frame.write(head, HEADER_BYTES);
  frame.write(payload, HEADER_BYTES + headBytes);
  frame.writeUInt32LE(MAGIC, 0);
  frame.writeUInt32LE(bodyBytes, 4);
  frame.writeBigUInt64LE(BigInt(seq), 8);
  frame.writeUInt32LE(crc32(frame.subarray(HEADER_BYTES)), 16);
  return frame;
}

const MAGIC_BYTES = Buffer.from([0x53, 0x50, 0x57, 0x31]);

/**
 * Pure: every whole frame in `bytes`, wherever it lies, in number order. Moved frames are found too
 * (the caller drops those at or below its mark); a frame cut by a later one fails its check.
 */
export function decodeFrames(bytes: Buffer): SpooledDelivery[] {
  const found: SpooledDelivery[] = [];
  for (let at = bytes.indexOf(MAGIC_BYTES); at >= 0; at = bytes.indexOf(MAGIC_BYTES, at + 1)) {
    const frame = frameAt(bytes, at);
    if (frame) found.push(frame);
  }
  return found.sort((a, b) => a.seq - b.seq);
}

function frameAt(bytes: Buffer, at: number): SpooledDelivery | undefined {
  if (at + HEADER_BYTES > bytes.length) return undefined;
  const end = at + HEADER_BYTES + bytes.readUInt32LE(at + 4);
  if (end > bytes.length) return undefined;
  const body = bytes.subarray(at + HEADER_BYTES, end);
  if (crc32(body) !== bytes.readUInt32LE(at + 16)) return undefined;
  const newline = body.indexOf(0x0a);
  if (newline < 0) return undefined;
  let meta: FrameMeta;
  try {
    meta = JSON.parse(body.toString("utf8", 0, newline)) as FrameMeta;
  } catch {
    return undefined;
  }
  const ref = meta.ref;
  return {
    seq: Number(bytes.readBigUInt64LE(at + 8)),
    ...(ref ? { ref: { file: ref.file, offset: ref.offset, length: ref.length } } : {}),
    delivery: {
      id: meta.id,
      event: meta.event,
      action: meta.action,
      installationId: meta.installationId,
      repository: meta.repository,
      headers: meta.headers,
      payload: body.toString("utf8", newline + 1),
      receivedAt: new Date(meta.receivedAt),
      ...(meta.settled === true ? { settled: true } : {}),
    },
  };
}

/** Pure: where a frame of `length` bytes goes in a ring of `size` bytes, or undefined when it does not fit. */
export function placeFrame(size: number, head: number, oldest: number | undefined, length: number): number | undefined {
  if (oldest === undefined) return length <= size ? 0 : undefined; // empty: from the start again
  if (head > oldest) {
    if (head + length <= size) return head;
    return length <= oldest ? 0 : undefined; // wrap round to the start, before the oldest
  }
  return head + length <= oldest ? head : undefined;
}

/** The spool file: a ring of frames, appended at the head and released from the oldest. */
export class SpoolFile {
  #fd: number | undefined;
  #head = 0;
  /** Offsets of the frames not released yet, oldest first. */
  #held: number[] = [];
  #first = 0;

  constructor(
    readonly path: string,
    readonly size = DEFAULT_SPOOL_BYTES,
  ) {}

  /** What a crash left in the file at `path` (nothing when there is no file). */
  static leftIn(path: string): SpooledDelivery[] {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    return decodeFrames(bytes);
  }

  /** Frames written and not released. */
  get held(): number {
    return this.#held.length - this.#first;
  }

  /** Writes `frame` durably against a crash of the process; false when the ring has no room for it (nothing written). */
  append(frame: Buffer): boolean {
    const oldest = this.held > 0 ? this.#held[this.#first] : undefined;
    const at = placeFrame(this.size, this.#head, oldest, frame.length);
    if (at === undefined) return false;
    const fd = this.#open();
    let written = 0;
    while (written < frame.length) written += writeSync(fd, frame, written, frame.length - written, at + written);
    this.#held.push(at);
    this.#head = at + frame.length;
    return true;
  }

  /** The oldest `count` frames are in the store: their space may be written again. */
  release(count: number): void {
    this.#first += count;
    if (this.#first >= this.#held.length) {
      this.#held = [];
      this.#first = 0;
    } else if (this.#first > 1024 && this.#first * 2 > this.#held.length) {
      this.#held = this.#held.slice(this.#first);
      this.#first = 0;
    }
  }

  /** Closes the file and removes it (called once everything in it is in the store). */
  discard(): void {
    this.close();
    rmSync(this.path, { force: true });
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
    this.#head = 0;
    this.#held = [];
    this.#first = 0;
  }

  /** Opened and filled with zeros on first use: later writes land in allocated space and never extend the file. */
  #open(): number {
    if (this.#fd !== undefined) return this.#fd;
    const fd = openSync(this.path, "w+");
    try {
      const zeros = Buffer.alloc(1024 * 1024);
      for (let at = 0; at < this.size; at += zeros.length) writeSync(fd, zeros, 0, Math.min(zeros.length, this.size - at), at);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    this.#fd = fd;
    return fd;
  }
}
