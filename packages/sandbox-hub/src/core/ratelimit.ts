// Primary rate limits (a budget per credential that resets hourly on the sandbox
// clock) and a configurable secondary limit that answers 403/429 with Retry-After.
export interface Bucket {
  limit: number;
  used: number;
  resetAt: Date;
  resource: string;
}

export interface SecondaryLimit {
  status: 403 | 429;
  retryAfterSec: number;
  /** Every Nth request is refused. */
  everyN?: number;
  /** The next N requests are refused. */
  nextN?: number;
}

const HOUR_MS = 60 * 60 * 1000;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private secondary: SecondaryLimit | undefined;
  private secondaryCount = 0;

  constructor(private readonly defaultLimit: (key: string) => number) {}

  bucket(key: string, now: Date): Bucket {
    let b = this.buckets.get(key);
    if (!b) {
      b = { limit: this.defaultLimit(key), used: 0, resetAt: new Date(now.getTime() + HOUR_MS), resource: "core" };
      this.buckets.set(key, b);
    }
    if (now >= b.resetAt) {
      b.used = 0;
      b.resetAt = new Date(now.getTime() + HOUR_MS);
    }
    return b;
  }

  set(key: string, now: Date, opts: { limit: number; remaining?: number; resetAt?: Date }): void {
    const b = this.bucket(key, now);
    b.limit = opts.limit;
    b.used = opts.remaining === undefined ? 0 : Math.max(0, opts.limit - opts.remaining);
    if (opts.resetAt) b.resetAt = opts.resetAt;
  }

  setSecondary(limit: SecondaryLimit | undefined): void {
    this.secondary = limit ? { ...limit } : undefined;
    this.secondaryCount = 0;
  }

  /** Whether this request trips the secondary limit (consumes `nextN`). */
  secondaryHit(): SecondaryLimit | undefined {
    const s = this.secondary;
    if (!s) return undefined;
    if (s.nextN !== undefined) {
      if (s.nextN <= 0) return undefined;
      s.nextN -= 1;
      return s;
    }
    if (s.everyN !== undefined && s.everyN > 0) {
      this.secondaryCount += 1;
      return this.secondaryCount % s.everyN === 0 ? s : undefined;
    }
    return s;
  }

  headers(b: Bucket): Record<string, string> {
    return {
      "X-RateLimit-Limit": String(b.limit),
      "X-RateLimit-Remaining": String(Math.max(0, b.limit - b.used)),
      "X-RateLimit-Reset": String(Math.floor(b.resetAt.getTime() / 1000)),
      "X-RateLimit-Used": String(b.used),
      "X-RateLimit-Resource": b.resource,
    };
  }

  snapshot(): Record<string, Bucket> {
    return Object.fromEntries(this.buckets);
  }
}
