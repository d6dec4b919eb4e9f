// Primary rate limits (a budget per credential that resets hourly on the sandbox
// clock), a configurable secondary limit that answers 403/429 with Retry-After, and the secondary
// limits GitHub documents ("Rate limits for the REST API": concurrent requests, points a minute
// with a write costing more than a read, content-creating requests a minute and an hour), enforced
// per credential on the sandbox clock when turned on.
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
const MINUTE_MS = 60 * 1000;

/** GitHub's documented secondary limits; each may be set lower in a test. */
export interface DocumentedLimits {
  /** Requests under way at once (GitHub: no more than 100, REST and GraphQL together). */
  concurrent: number;
  /** Points a minute (GitHub: 900 for REST). */
  pointsPerMinute: number;
  /** What a GET, HEAD or OPTIONS costs (1) and what any other method costs (5). */
  readPoints: number;
  writePoints: number;
  /** Content-creating requests (POST here) a minute and an hour (GitHub: 80 and 500). */
  creatingPerMinute: number;
  creatingPerHour: number;
}

export const GITHUB_DOCUMENTED_LIMITS: DocumentedLimits = {
  concurrent: 100,
  pointsPerMinute: 900,
  readPoints: 1,
  writePoints: 5,
  creatingPerMinute: 80,
  creatingPerHour: 500,
};

/** Which documented limit refused a request, and when a retry would pass it. */
export interface DocumentedRefusal {
  limit: "concurrent" | "points" | "creating-minute" | "creating-hour";
  retryAfterSec: number;
}

interface Spending {
  underWay: number;
  /** [sandbox ms, points] of the last minute, oldest first. */
  points: [number, number][];
  pointsHeld: number;
  /** Sandbox ms of the content-creating requests of the last hour, oldest first. */
  creating: number[];
}

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private secondary: SecondaryLimit | undefined;
  private secondaryCount = 0;
  private documented: DocumentedLimits | undefined;
  private readonly spending = new Map<string, Spending>();

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

  /** Enforce GitHub's documented secondary limits (`GITHUB_DOCUMENTED_LIMITS` unless given), or stop. */
  setDocumented(limits: Partial<DocumentedLimits> | undefined): void {
    this.documented = limits ? { ...GITHUB_DOCUMENTED_LIMITS, ...limits } : undefined;
    this.spending.clear();
  }

  /**
   * Admits a request of `key` under the documented limits, or says which one refuses it. An
   * admitted request is under way until `release(key)`; a refused one costs nothing.
   */
  admit(key: string, method: string, now: Date): DocumentedRefusal | undefined {
    const d = this.documented;
    if (!d) return undefined;
    const t = now.getTime();
    let s = this.spending.get(key);
    if (!s) this.spending.set(key, (s = { underWay: 0, points: [], pointsHeld: 0, creating: [] }));
    while (s.points.length && s.points[0]![0] <= t - MINUTE_MS) s.pointsHeld -= s.points.shift()![1];
    while (s.creating.length && s.creating[0]! <= t - HOUR_MS) s.creating.shift();
    const after = (at: number) => Math.max(1, Math.ceil((at - t) / 1000));
    if (s.underWay >= d.concurrent) return { limit: "concurrent", retryAfterSec: 1 };
    const cost = READS.has(method) ? d.readPoints : d.writePoints;
    if (s.pointsHeld + cost > d.pointsPerMinute) {
      // The minute frees points as its oldest requests age out of it.
      let freed = 0;
      let at = t;
      for (const [when, points] of s.points) {
        freed += points;
        at = when + MINUTE_MS;
        if (s.pointsHeld - freed + cost <= d.pointsPerMinute) break;
      }
      return { limit: "points", retryAfterSec: after(at) };
    }
    if (method === "POST") {
      const inMinute = s.creating.filter((c) => c > t - MINUTE_MS);
      if (inMinute.length >= d.creatingPerMinute)
        return {
          limit: "creating-minute",
          retryAfterSec: after(inMinute[inMinute.length - d.creatingPerMinute]! + MINUTE_MS),
        };
      if (s.creating.length >= d.creatingPerHour)
        return {
          limit: "creating-hour",
          retryAfterSec: after(s.creating[s.creating.length - d.creatingPerHour]! + HOUR_MS),
        };
      s.creating.push(t);
    }
    s.points.push([t, cost]);
    s.pointsHeld += cost;
    s.underWay += 1;
    return undefined;
  }

  release(key: string): void {
    const s = this.spending.get(key);
    if (s && s.underWay > 0) s.underWay -= 1;
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
