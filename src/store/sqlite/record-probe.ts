// The file half of a store's `canRecord` (contract.ts): bytes written where payloads go, synced,
// and removed, to learn whether a payload of that size can be written there now (the disk full
// and freed since, a directory made read-only). Only asked while recording is failing.
import { mkdir, open, rm } from "node:fs/promises";
import { join } from "node:path";

/** Largest write of the probe; a larger probe writes this many times. */
const CHUNK = 64 * 1024;
/** The probe's file name: the payload log reads only names of its own shape (payload-log.ts). */
const PROBE_FILE = `.record-probe-${process.pid}`;

/** Writes `bytes` zeros to a scratch file in `dir` and syncs them; throws what the writes threw. The file is removed either way. */
export async function probeFileWrite(dir: string, bytes: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, PROBE_FILE);
  const zeros = Buffer.alloc(Math.min(CHUNK, Math.max(1, bytes)));
  try {
    const handle = await open(path, "w");
    try {
      for (let left = Math.max(1, bytes); left > 0; ) {
        const { bytesWritten } = await handle.write(zeros, 0, Math.min(zeros.length, left));
        left -= bytesWritten;
      }
      // Some filesystems report a full disk only when the data is written back.
      await handle.datasync();
    } finally {
      await handle.close();
    }
  } finally {
    await rm(path, { force: true });
  }
}
