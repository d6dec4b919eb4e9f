// The intake spool: while deliveries flood in, and for deliveries no handler takes, the SQLite
// store makes them durable against a crash of the process with one write a turn of the event loop
// and lets the intake answer, then moves what was spooled into SQLite in batches a few
// milliseconds later (sqlite-deliveries.ts, #moveBatch). A commit per
// delivery costs a dozen WAL frames (the row, its indexes), each two writes; a batch shares the
// index pages and the commit.
//
// The one write is the payload log's (payload-log.ts): each spooled delivery is appended there as a
// frame, its fields before its payload, and the row moved into SQLite points at the payload inside
// the frame. (Until schema 13 the frame went to a ring file of its own, `intake.spool`, after the
// payload went to the log: two writes a delivery, and on a machine where a system call is a trip to
// the hypervisor the second cost a tenth of the intake's rate. Such a file is still read once.)
//
// Frames: magic, body length, sequence number, CRC-32 of the body, then the body (the delivery's
// fields as JSON, a newline, the payload). The store records, in the commit that moves a batch,
// the highest number moved and where in the log the last moved frame ends; frames are appended in
// number order, so after a crash every whole frame from there on numbered above the mark is one
// that was answered and not yet moved, and is moved then, in number order.
import { closeSync, fstatSync, openSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import type { IncomingDelivery } from "../records.js";
import { PayloadLog, readAt, type PayloadRef } from "./payload-log.js";

const MAGIC = 0x31575053;
const HEADER_BYTES = 20;
/** Deliveries spooled and not yet moved, at most: past this (moves failing, say) the store commits them one by one. */
export const DEFAULT_MAX_UNMOVED = 20_000;
/** A frame's body is at most this long (a webhook payload is at most 25 MB): a longer length read is not a frame. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;
/** The log is read this much at a time when looking for frames. */
const SCAN_CHUNK = 1024 * 1024;

/** The service's spool: how the SQLite store is told to spool (sqlite.ts). */
export interface SpoolSettings {
  /** The ring file of versions before schema 13: what a crash left in it is moved at open, and it goes. */
  ringPath?: string;
  /** DEFAULT_MAX_UNMOVED unless given (tests). */
  maxUnmoved?: number;
}

export interface SpooledDelivery {
  seq: number;
  delivery: IncomingDelivery;
  /** Where the payload is in the payload log, when it is there rather than in the frame (`delivery.payload` is then empty). */
  ref?: PayloadRef;
}

/** A place in the payload log: where the scan for unmoved frames starts. */
export interface LogPosition {
  file: string;
  offset: number;
}

interface FrameMeta {
  id: string;
  event: string;
  action?: string;
  installationId?: number;
  repository?: string;
  receivedAt: number;
  headers: Record<string, string>;
  /** Ring frames only (before schema 13): the payload's place in the log. */
  ref?: PayloadRef;
  /** Recorded done: no handler takes it. */
  settled?: true;
}

/**
 * The part of `d`'s frame before its payload (`payload`, the bytes that follow it in the same
 * write): header and fields. The parsed tree, if any, is not kept.
 */
export function frameHead(seq: number, d: IncomingDelivery, payload: Buffer): Buffer {
  const meta: FrameMeta = { id: d.id, event: d.event, receivedAt: d.receivedAt.getTime(), headers: d.headers };
  if (d.action !== undefined) meta.action = d.action;
  if (d.installationId !== undefined) meta.installationId = d.installationId;
  if (d.repository !== undefined) meta.repository = d.repository;
  if (d.settled) meta.settled = true;
  const fields = Buffer.from(`${JSON.stringify(meta)}\n`, "utf8");
  const head = Buffer.allocUnsafe(HEADER_BYTES + fields.length);
  fields.copy(head, HEADER_BYTES);
  head.writeUInt32LE(MAGIC, 0);
  head.writeUInt32LE(fields.length + payload.length, 4);
  head.writeBigUInt64LE(BigInt(seq), 8);
  head.writeUInt32LE(crc32(payload, crc32(fields)), 16);
  return head;
}

/** A whole frame in one buffer (`frameHead`, then the payload), as it lies in the log; the store writes the two parts in one call instead. */
export function encodeFrame(seq: number, d: IncomingDelivery): Buffer {
  const payload = Buffer.from(d.payload, "utf8");
  return Buffer.concat([frameHead(seq, d, payload), payload]);
}

const MAGIC_BYTES = Buffer.from([0x53, 0x50, 0x57, 0x31]);

/**
 * Pure: every whole frame in `bytes`, wherever it lies, in number order. Moved frames are found too
 * (the caller drops those at or below its mark); a frame cut by a later one fails its check.
 */
export function decodeFrames(bytes: Buffer): SpooledDelivery[] {
  const found: SpooledDelivery[] = [];
  for (let at = bytes.indexOf(MAGIC_BYTES); at >= 0; at = bytes.indexOf(MAGIC_BYTES, at + 1)) {
    if (at + HEADER_BYTES > bytes.length) break;
    const end = at + HEADER_BYTES + bytes.readUInt32LE(at + 4);
    if (end > bytes.length) continue;
    const body = bytes.subarray(at + HEADER_BYTES, end);
    const frame = frameOf(bytes.subarray(at, at + HEADER_BYTES), body);
    if (frame) found.push({ ...frame.spooled, delivery: { ...frame.spooled.delivery, payload: body.toString("utf8", frame.fieldsBytes) } });
  }
  return found.sort((a, b) => a.seq - b.seq);
}

/**
 * The frame made of `header` and `body`, or undefined when they are not one (its check fails, its
 * fields do not parse). Its payload, `body` from `fieldsBytes` on, is left to the caller to decode
 * or not (recovery from the log only points at it): `delivery.payload` is empty.
 */
function frameOf(header: Buffer, body: Buffer): { spooled: SpooledDelivery; fieldsBytes: number } | undefined {
  if (header.readUInt32LE(0) !== MAGIC || header.readUInt32LE(4) !== body.length) return undefined;
  if (crc32(body) !== header.readUInt32LE(16)) return undefined;
  const newline = body.indexOf(0x0a);
  if (newline < 0) return undefined;
  let meta: FrameMeta;
  try {
    meta = JSON.parse(body.toString("utf8", 0, newline)) as FrameMeta;
  } catch {
    return undefined;
  }
  if (typeof meta?.id !== "string" || typeof meta.event !== "string") return undefined;
  const ref = meta.ref;
  return {
    fieldsBytes: newline + 1,
    spooled: {
      seq: Number(header.readBigUInt64LE(8)),
      ...(ref ? { ref: { file: ref.file, offset: ref.offset, length: ref.length } } : {}),
      delivery: {
        id: meta.id,
        event: meta.event,
        action: meta.action,
        installationId: meta.installationId,
        repository: meta.repository,
        headers: meta.headers,
        payload: "",
        receivedAt: new Date(meta.receivedAt),
        ...(meta.settled === true ? { settled: true } : {}),
      },
    },
  };
}

/**
 * The whole frames in the payload log from `from` on (that file from that offset, then the later
 * files of the same writer), in number order, each with `ref` to its payload inside it and an empty
 * `delivery.payload`. Read a chunk at a time; a frame's payload is checked, not kept.
 */
export function framesInLog(dir: string, from: LogPosition): SpooledDelivery[] {
  const found: SpooledDelivery[] = [];
  for (const file of PayloadLog.filesFrom(dir, from.file)) {
    let fd: number;
    try {
      fd = openSync(join(dir, file), "r");
    } catch {
      continue; // removed by hand: nothing in it can be moved
    }
    try {
      scanFile(fd, file, file === from.file ? from.offset : 0, found);
    } finally {
      closeSync(fd);
    }
  }
  return found.sort((a, b) => a.seq - b.seq);
}

function scanFile(fd: number, file: string, from: number, found: SpooledDelivery[]): void {
  const size = fstatSync(fd).size;
  const chunk = Buffer.allocUnsafe(SCAN_CHUNK);
  let pos = from;
  while (pos + HEADER_BYTES <= size) {
    const n = readAt(fd, chunk, pos, Math.min(chunk.length, size - pos));
    const at = chunk.subarray(0, n).indexOf(MAGIC_BYTES);
    if (at < 0) {
      // The magic may straddle the chunk's end: the next read starts three bytes back.
      pos += Math.max(1, n - (MAGIC_BYTES.length - 1));
      continue;
    }
    const start = pos + at;
    const header = Buffer.allocUnsafe(HEADER_BYTES);
    const length = readAt(fd, header, start, HEADER_BYTES) === HEADER_BYTES ? header.readUInt32LE(4) : -1;
    const end = start + HEADER_BYTES + length;
    if (length < 0 || length > MAX_BODY_BYTES || end > size) {
      pos = start + 1;
      continue;
    }
    const body = Buffer.allocUnsafe(length);
    const frame = readAt(fd, body, start + HEADER_BYTES, length) === length ? frameOf(header, body) : undefined;
    if (!frame) {
      pos = start + 1;
      continue;
    }
    const { spooled, fieldsBytes } = frame;
    const payloadAt = start + HEADER_BYTES + fieldsBytes;
    found.push({ seq: spooled.seq, delivery: spooled.delivery, ref: { file, offset: payloadAt, length: end - payloadAt } });
    // Past the whole frame: nothing inside a payload is taken for a frame.
    pos = end;
  }
}

/** What a crash left in the ring file `path` of versions before schema 13 (nothing when there is none). */
export function framesInRing(path: string): SpooledDelivery[] {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  return decodeFrames(bytes);
}

/** Removes the ring file once what was in it is in the store. */
export function removeRing(path: string): void {
  rmSync(path, { force: true });
}
