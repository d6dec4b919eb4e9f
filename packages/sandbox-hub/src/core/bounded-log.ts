// The hub's logs (requests answered, webhook deliveries, effects) keep their newest entries only,
// so a sandbox that runs for days (`steward start` without credentials, a benchmark's thousands of
// runs) holds a bounded amount of memory: an unbounded log grew the heap by about 2 MB a second
// in the end-to-end benchmark, and with it the collector's pauses on the loop Steward shares.
// The oldest entries go in batches, not one per append: a splice moves the whole array.

/** Appends `entry`; once the log is a tenth over `max`, the oldest entries are dropped down to `max`. */
export function appendBounded<T>(log: T[], entry: T, max: number, onDrop?: (dropped: T[]) => void): void {
  log.push(entry);
  if (log.length <= max + Math.ceil(max / 10)) return;
  const dropped = log.splice(0, log.length - max);
  onDrop?.(dropped);
}
