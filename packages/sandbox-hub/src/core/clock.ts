// The sandbox clock: real time plus an offset tests control, so tokens, log URLs and
// rate-limit windows can be made to expire without waiting.
export class SandboxClock {
  private offsetMs = 0;

  constructor(start?: Date) {
    if (start) this.set(start);
  }

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  set(date: Date): void {
    this.offsetMs = date.getTime() - Date.now();
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

/** `YYYY-MM-DDTHH:MM:SSZ` (the API's timestamp form: no milliseconds). */
export function formatTimestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
