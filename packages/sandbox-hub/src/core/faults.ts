// Fault injection per route: error statuses at a rate, added latency, dropped
// connections. Decisions come from a seeded generator so a run replays exactly.
import picomatch from "picomatch";
import type { Random } from "./random.js";

export interface Fault {
  /** Probability in [0, 1] of answering `status` (default 1 when `status` is set). */
  errorRate?: number;
  /** 500 or 502 (default 500); or a refusal the API gives at times, e.g. 403 with `message`. */
  status?: number;
  /**
   * The error's `message` (default `Server Error`), for answers GitHub gives that the hub's state
   * does not produce on its own (e.g. 403 `This workflow is already running` in a race).
   */
  message?: string;
  /** Added before answering. */
  latencyMs?: number;
  /** Close the connection without an answer: `true` always, or a probability. */
  drop?: boolean | number;
  /** Apply to this many matching requests only, then remove itself. */
  times?: number;
  /**
   * Lose the answer, not the request: run the route first (its state change and effects
   * happen), then drop the connection or answer `status` instead of the real answer.
   * Alone (no `drop`, `status` or `errorRate`) it drops the connection.
   */
  after?: boolean;
}

export interface FaultDecision {
  latencyMs: number;
  status: number | undefined;
  drop: boolean;
  /** Apply `status`/`drop` after the route ran (the change stands, the answer is lost). */
  after: boolean;
  message: string;
}

interface Rule {
  pattern: string;
  method: string | undefined;
  path: string;
  test: (path: string, routePattern: string | undefined) => boolean;
  fault: Fault;
}

/**
 * A pattern is `[METHOD ]PATH`, where PATH is either a route pattern with `{name}`
 * segments (compared with the matched route) or a glob over the concrete path.
 */
function compile(pattern: string): Pick<Rule, "method" | "path" | "test"> {
  const m = /^([A-Z]+)\s+(.+)$/.exec(pattern.trim());
  const method = m ? m[1] : undefined;
  const path = m ? m[2]! : pattern.trim();
  if (path.includes("{")) return { method, path, test: (_p, route) => route === path };
  const isMatch = picomatch(path, { dot: true });
  return { method, path, test: (p) => isMatch(p) };
}

export class FaultRules {
  private rules: Rule[] = [];

  constructor(private readonly random: Random) {}

  set(pattern: string, fault: Fault): void {
    this.rules = this.rules.filter((r) => r.pattern !== pattern);
    this.rules.push({ pattern, ...compile(pattern), fault: { ...fault } });
  }

  clear(): void {
    this.rules = [];
  }

  /** `naming`: only rules whose path pattern starts with it apply (another host's paths). */
  decide(method: string, path: string, routePattern: string | undefined, naming?: string): FaultDecision | undefined {
    const rule = this.rules.find(
      (r) => (!r.method || r.method === method) && (!naming || r.path.startsWith(naming)) && r.test(path, routePattern),
    );
    if (!rule) return undefined;
    const f = rule.fault;
    if (f.times !== undefined) {
      f.times -= 1;
      if (f.times <= 0) this.rules = this.rules.filter((r) => r !== rule);
    }
    // `after` alone loses the answer by dropping the connection.
    const dropAfter = f.after === true && f.drop === undefined && f.status === undefined && f.errorRate === undefined;
    const dropRate = f.drop === true || dropAfter ? 1 : typeof f.drop === "number" ? f.drop : 0;
    const drop = dropRate > 0 && this.random() < dropRate;
    const errorRate = f.errorRate ?? (f.status !== undefined ? 1 : 0);
    const status = !drop && errorRate > 0 && this.random() < errorRate ? (f.status ?? 500) : undefined;
    return { latencyMs: f.latencyMs ?? 0, status, drop, after: f.after === true, message: f.message ?? "Server Error" };
  }
}
