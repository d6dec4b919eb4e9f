// The sandbox clock: real time plus an offset tests control, so tokens, log URLs and
// rate-limit windows can be made to expire without waiting.
export class SandboxClock {
  private offsetMs = 0;
  private readonly listeners = new Set<(deltaMs: number) => void>();

  constructor(start?: Date) {
    if (start) this.set(start);
  }

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  set(date: Date): void {
    const before = this.offsetMs;
    this.offsetMs = date.getTime() - Date.now();
    this.moved(this.offsetMs - before);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
    this.moved(ms);
  }

  /** Be told how far the clock jumped (ms; negative: back) on each `set` and `advance`. Returns the unsubscribe. */
  onMove(listener: (deltaMs: number) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  private moved(deltaMs: number): void {
    if (deltaMs === 0) return;
    for (const l of [...this.listeners]) l(deltaMs);
  }
}

/** `YYYY-MM-DDTHH:MM:SSZ` (the API's timestamp form: no milliseconds). */
export function formatTimestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
