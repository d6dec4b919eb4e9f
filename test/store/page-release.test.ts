// The payload log lets go of cached pages behind its writer (src/store/page-release.ts): the newest
// `keepBytes` stay in the page cache, older pages are dropped once written back, every byte is
// still read back whole, the advice covers each appended page exactly, across file rolls, and
// pages a queued delivery will still read are held within a bound.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PayloadLog } from "../../src/store/sqlite/payload-log.js";
import { PageRelease, pageReleaseAvailable } from "../../src/store/sqlite/page-release.js";
import { tempDir } from "../engine/helpers.js";
import { cachedBytes } from "../support/page-cache.js";

const KB = 1024;
const MB = 1024 * KB;

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await cleanup();
});

function payload(n: number, size: number): Buffer {
  const bytes = Buffer.alloc(size, 0x61 + (n % 26));
  bytes.write(`#${n}#`, 0);
  return bytes;
}

describe.runIf(process.platform === "linux")("on Linux", () => {
  it("has the fadvise addon built (else the cache would grow by every payload)", () => {
    expect(pageReleaseAvailable).toBe(true);
  });

  it("keeps only the newest keepBytes of a file cached, and reads every payload back whole", () => {
    // Synced every MiB (durability `power`), so the pages behind the writer are clean when their
    // turn to be dropped comes: what stays cached is then exactly what the log chose to keep.
    const log = new PayloadLog(dir, { writable: true, sync: true, pageRelease: { keepBytes: 2 * MB, stepBytes: 256 * KB } });
    const refs = [];
    for (let n = 0; n < 256; n++) {
      refs.push(log.append(payload(n, 64 * KB)));
      if (n % 16 === 15) log.syncAppended();
    }
    const [file] = readdirSync(dir);
    const cached = cachedBytes(join(dir, file!));
    // 16 MiB written; 2 MiB kept, plus the step not yet advised and the zeros filled ahead.
    expect(cached).toBeLessThan(6 * MB);
    expect(cached).toBeGreaterThanOrEqual(2 * MB);
    refs.forEach((ref, n) => expect(log.readBytes(ref)?.equals(payload(n, 64 * KB))).toBe(true));
    log.close();
  });

  it("without release, the same writing leaves the whole file cached (what the test above would see)", () => {
    const log = new PayloadLog(dir, { writable: true, sync: true, pageRelease: { advise: () => 0 } });
    for (let n = 0; n < 256; n++) {
      log.append(payload(n, 64 * KB));
      if (n % 16 === 15) log.syncAppended();
    }
    const [file] = readdirSync(dir);
    expect(cachedBytes(join(dir, file!))).toBeGreaterThanOrEqual(16 * MB);
    log.close();
  });
});

describe("the advice given", () => {
  interface Advice {
    fd: number;
    offset: number;
    length: number;
  }

  function observed(keepBytes: number, stepBytes: number, maxHoldBytes?: number) {
    const fds = new Map<string, number>([
      ["a", 10],
      ["b", 11],
      ["c", 12],
    ]);
    const advice: Advice[] = [];
    const release = new PageRelease((file) => fds.get(file), {
      keepBytes,
      stepBytes,
      ...(maxHoldBytes !== undefined ? { maxHoldBytes } : {}),
      advise: (fd, offset, length, kind) => {
        expect(kind).toBe(4);
        advice.push({ fd, offset, length });
        return 0;
      },
    });
    return { release, advice, fds };
  }

  it("covers every appended page exactly twice (write back, then drop), across files, and never the newest keepBytes", () => {
    const { release, advice } = observed(64 * KB, 8 * KB);
    const files = ["a", "b", "c"];
    const sizes = [3000, 5000, 14_500, 700];
    const written = new Map<number, number>();
    let n = 0;
    let total = 0;
    for (const [i, file] of files.entries()) {
      let size = 0;
      while (size < 100 * KB + i * 7000) {
        const len = sizes[n++ % sizes.length]!;
        release.appended(file, size, size + len);
        size += len;
        total += len;
      }
      written.set(10 + i, size);
    }
    // Each page of each file: how many pieces of advice covered it whole.
    const covered = new Map<string, number>();
    for (const a of advice) {
      expect(a.offset % 4096).toBe(0);
      for (let page = a.offset; page + 4096 <= a.offset + a.length; page += 4096) {
        const key = `${a.fd}:${page}`;
        covered.set(key, (covered.get(key) ?? 0) + 1);
      }
    }
    expect([...covered.values()].every((c) => c <= 2)).toBe(true);
    // Every whole page more than keepBytes (plus a step) behind the end of the stream was dropped.
    let streamAt = 0;
    for (const [fd, size] of written) {
      for (let page = 0; page + 4096 <= size; page += 4096) {
        const behind = total - (streamAt + page + 4096);
        const times = covered.get(`${fd}:${page}`) ?? 0;
        if (behind > 64 * KB + 8 * KB) expect(times, `fd ${fd} page ${page}`).toBe(2);
        if (behind < 64 * KB - 4096) expect(times, `fd ${fd} page ${page}`).toBeLessThanOrEqual(1);
        if (behind < 8 * KB) expect(times, `fd ${fd} page ${page}`).toBe(0);
      }
      streamAt += size;
    }
  });

  it("keeps the pages from the oldest payload still to be read, within maxHoldBytes, and drops them once it moves on", () => {
    const { release, advice } = observed(16 * KB, 4 * KB, 64 * KB);
    /** Bytes of file `a` advised to drop (the second advice of a page), by the end of each range. */
    const droppedTo = () => {
      const seen = new Map<number, number>();
      let to = 0;
      for (const a of advice) {
        const times = (seen.get(a.offset) ?? 0) + 1;
        seen.set(a.offset, times);
        if (times === 2) to = Math.max(to, a.offset + a.length);
      }
      return to;
    };
    let hold: { file: string; offset: number } | undefined = { file: "a", offset: 8 * KB };
    release.holdFrom(() => hold);
    for (let at = 0; at < 48 * KB; at += 4 * KB) release.appended("a", at, at + 4 * KB);
    // 48 KiB written, 16 kept: without the hold 32 KiB would be dropped; with it, what is before 8 KiB.
    expect(droppedTo()).toBe(8 * KB);
    // The backlog lags further than maxHoldBytes: the hold gives way there.
    for (let at = 48 * KB; at < 128 * KB; at += 4 * KB) release.appended("a", at, at + 4 * KB);
    expect(droppedTo()).toBe(128 * KB - 64 * KB);
    // The pool caught up: the hold is near the writer, and everything older than keepBytes goes.
    hold = { file: "a", offset: 124 * KB };
    for (let at = 128 * KB; at < 140 * KB; at += 4 * KB) release.appended("a", at, at + 4 * KB);
    expect(droppedTo()).toBe(140 * KB - 16 * KB);
    // No hold (nothing queued), or a place in no span it knows: keepBytes alone.
    hold = undefined;
    for (let at = 140 * KB; at < 160 * KB; at += 4 * KB) release.appended("a", at, at + 4 * KB);
    expect(droppedTo()).toBe(160 * KB - 16 * KB);
    hold = { file: "gone", offset: 0 };
    for (let at = 160 * KB; at < 180 * KB; at += 4 * KB) release.appended("a", at, at + 4 * KB);
    expect(droppedTo()).toBe(180 * KB - 16 * KB);
  });

  it("hands each piece of advice to another thread when one takes it, and gives it itself when that thread cannot", () => {
    const inline: Advice[] = [];
    const handed: { file: string; offset: number; length: number }[] = [];
    let threadUp = true;
    const release = new PageRelease((file) => (file === "a" ? 10 : undefined), {
      keepBytes: 16 * KB,
      stepBytes: 4 * KB,
      advise: (fd, offset, length) => inline.push({ fd, offset, length }) && 0,
      elsewhere: (file, offset, length) => threadUp && handed.push({ file, offset, length }) > 0,
    });
    for (let at = 0; at < 40 * KB; at += 4 * KB) release.appended("a", at, at + 4 * KB);
    expect(inline).toEqual([]);
    expect(handed.length).toBeGreaterThan(0);
    expect(handed.every((h) => h.file === "a" && h.offset % 4096 === 0)).toBe(true);
    threadUp = false;
    const handedBefore = handed.length;
    for (let at = 40 * KB; at < 80 * KB; at += 4 * KB) release.appended("a", at, at + 4 * KB);
    expect(handed.length).toBe(handedBefore);
    expect(inline.length).toBeGreaterThan(0);
    expect(inline.every((a) => a.fd === 10)).toBe(true);
  });

  it("skips files whose descriptor is gone (removed by a purge) and goes on with the rest", () => {
    const { release, advice, fds } = observed(16 * KB, 4 * KB);
    for (let at = 0; at < 40 * KB; at += 4 * KB) release.appended("a", at, at + 4 * KB);
    fds.delete("a");
    for (let at = 0; at < 40 * KB; at += 4 * KB) release.appended("b", at, at + 4 * KB);
    expect(advice.some((a) => a.fd === 11)).toBe(true);
    const afterRemoval = advice.length;
    for (let at = 40 * KB; at < 80 * KB; at += 4 * KB) release.appended("b", at, at + 4 * KB);
    expect(advice.slice(afterRemoval).every((a) => a.fd === 11)).toBe(true);
  });
});
