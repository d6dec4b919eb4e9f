// Route table: `{name}` matches one path segment, `{name+}` the rest of the path
// (one or more segments, e.g. a file path or a branch with slashes). The most
// specific match wins (literal segments beat parameters, parameters beat rests).
import type { RouteHandler, RouteOptions, Router } from "./types.js";

export interface Route {
  method: string;
  pattern: string;
  handler: RouteHandler;
  options: RouteOptions;
  segments: string[];
}

/** A pattern segment, classified once when the route is added rather than on every request. */
type Segment = { kind: "literal"; text: string } | { kind: "param"; name: string } | { kind: "rest"; name: string };

interface CompiledRoute {
  route: Route;
  segments: Segment[];
  /** Only a rest segment matches more path segments than the pattern has. */
  hasRest: boolean;
}

export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

export class RouteTable implements Router {
  private readonly routes: Route[] = [];
  // By method: every request of the sandbox (and every API call of a test or of `steward start`
  // in sandbox mode) is matched here, against a table of hundreds of routes.
  private readonly byMethod = new Map<string, CompiledRoute[]>();

  add(method: string, pattern: string, handler: RouteHandler, options: RouteOptions = {}): void {
    const route: Route = { method: method.toUpperCase(), pattern, handler, options, segments: splitPath(pattern) };
    this.routes.push(route);
    const segments = route.segments.map(compileSegment);
    const list = this.byMethod.get(route.method) ?? [];
    list.push({ route, segments, hasRest: segments.some((s) => s.kind === "rest") });
    this.byMethod.set(route.method, list);
  }

  /** The best route for a method and path; HEAD falls back to GET. */
  match(method: string, path: string): RouteMatch | undefined {
    const parts = splitPath(path);
    const upper = method.toUpperCase();
    const wanted = upper === "HEAD" ? ["HEAD", "GET"] : [upper];
    let best: { match: RouteMatch; score: number } | undefined;
    for (const m of wanted) {
      for (const compiled of this.byMethod.get(m) ?? []) {
        if (compiled.segments.length > parts.length || (!compiled.hasRest && compiled.segments.length !== parts.length))
          continue;
        const found = matchSegments(compiled.segments, parts);
        if (found && (!best || found.score > best.score))
          best = { match: { route: compiled.route, params: found.params }, score: found.score };
      }
    }
    return best?.match;
  }

  list(): readonly Route[] {
    return this.routes;
  }
}

function splitPath(path: string): string[] {
  return path.split("/").filter((p) => p.length > 0);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function compileSegment(seg: string): Segment {
  const rest = /^\{(.+)\+\}$/.exec(seg);
  if (rest) return { kind: "rest", name: rest[1]! };
  const param = /^\{(.+)\}$/.exec(seg);
  return param ? { kind: "param", name: param[1]! } : { kind: "literal", text: seg };
}

function matchSegments(
  pattern: Segment[],
  parts: string[],
): { params: Record<string, string>; score: number } | undefined {
  // Literals first: nearly every route fails on one, before any parameter is decoded.
  for (let i = 0; i < pattern.length; i++) {
    const seg = pattern[i]!;
    if (seg.kind === "rest") break;
    if (seg.kind === "literal" && seg.text !== parts[i]) return undefined;
  }
  const params: Record<string, string> = {};
  let score = 0;
  for (let i = 0; i < pattern.length; i++) {
    const seg = pattern[i]!;
    if (seg.kind === "rest") {
      if (i !== pattern.length - 1 || parts.length <= i) return undefined;
      params[seg.name] = parts.slice(i).map(safeDecode).join("/");
      return { params, score };
    }
    const part = parts[i];
    if (part === undefined) return undefined;
    if (seg.kind === "param") {
      params[seg.name] = safeDecode(part);
      score += 1;
    } else {
      score += 2;
    }
  }
  return parts.length === pattern.length ? { params, score } : undefined;
}
