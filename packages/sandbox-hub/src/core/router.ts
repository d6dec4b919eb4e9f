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

export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

export class RouteTable implements Router {
  private readonly routes: Route[] = [];

  add(method: string, pattern: string, handler: RouteHandler, options: RouteOptions = {}): void {
    this.routes.push({ method: method.toUpperCase(), pattern, handler, options, segments: splitPath(pattern) });
  }

  /** The best route for a method and path; HEAD falls back to GET. */
  match(method: string, path: string): RouteMatch | undefined {
    const parts = splitPath(path);
    const wanted = method.toUpperCase() === "HEAD" ? ["HEAD", "GET"] : [method.toUpperCase()];
    let best: { match: RouteMatch; score: number } | undefined;
    for (const route of this.routes) {
      if (!wanted.includes(route.method)) continue;
      const found = matchSegments(route.segments, parts);
      if (found && (!best || found.score > best.score)) best = { match: { route, params: found.params }, score: found.score };
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

function matchSegments(pattern: string[], parts: string[]): { params: Record<string, string>; score: number } | undefined {
  const params: Record<string, string> = {};
  let score = 0;
  for (let i = 0; i < pattern.length; i++) {
    const seg = pattern[i]!;
    const rest = /^\{(.+)\+\}$/.exec(seg);
    if (rest) {
      if (i !== pattern.length - 1 || parts.length <= i) return undefined;
      params[rest[1]!] = parts.slice(i).map(safeDecode).join("/");
      return { params, score };
    }
    const part = parts[i];
    if (part === undefined) return undefined;
    const param = /^\{(.+)\}$/.exec(seg);
    if (param) {
      params[param[1]!] = safeDecode(part);
      score += 1;
    } else if (seg === part) {
      score += 2;
    } else {
      return undefined;
    }
  }
  return parts.length === pattern.length ? { params, score } : undefined;
}
