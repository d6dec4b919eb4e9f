// Housekeeping that deletes many rows (the hourly purges) runs in bounded batches with the event
// loop's other work between them: one statement or transaction for an hour of rows (hundreds of
// thousands on a busy installation, everything past retention after a long stop) held the intake
// off for as long as it took.

/** Rows a purge removes per statement or transaction. */
export const PURGE_BATCH = 1_000;

/** Runs `batch(limit)` (it removes at most `limit` rows and says how many) until one removes fewer; the total. */
export async function inBatches(batch: (limit: number) => number, limit = PURGE_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const n = batch(limit);
    total += n;
    if (n < limit) return total;
    await new Promise((r) => setImmediate(r));
  }
}
