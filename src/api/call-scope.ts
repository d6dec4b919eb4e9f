// Which piece of work an API request belongs to. The engine runs each handler in a scope
// with a sink; the API client reports every request made inside it there, so the console can
// show what a handler did without every call site passing a recorder along.
import { AsyncLocalStorage } from "node:async_hooks";

/** One request as the console shows it: never headers, tokens, bodies or a query string. */
export interface ApiCall {
  method: string;
  /** The route template (`/repos/{owner}/{repo}/pulls`) or, for a literal URL, its path. */
  route: string;
  /** HTTP status; 0 when no response came. */
  status: number;
  ms: number;
}

export type ApiCallSink = (call: ApiCall) => void;

const scope = new AsyncLocalStorage<ApiCallSink>();

export function withApiCallSink<T>(sink: ApiCallSink, fn: () => T): T {
  return scope.run(sink, fn);
}

export function currentApiCallSink(): ApiCallSink | undefined {
  return scope.getStore();
}

/** The path of a request's URL: a template stays a template, a query string (it may carry anything) is dropped. */
export function routeOf(url: string): string {
  const path = /^[a-z]+:\/\//i.test(url) ? new URL(url).pathname : url;
  const cut = path.search(/[?#]/);
  return cut === -1 ? path : path.slice(0, cut);
}
