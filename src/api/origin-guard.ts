// Where a client's credentials may go: the API it was built for, nowhere else. A handler module or
// Probot app may pass any absolute URL to `octokit.request` ("GET https://elsewhere/x"), and
// Octokit's authentication would add the installation token (or the app's JWT) to it. This plugin
// takes the Authorization header off every request whose URL is outside the API origin, at the
// moment it is sent, whatever built the URL (a route template, `baseUrl` given per request, a
// caller's own `request.fetch`); the request itself still goes, without credentials. Token mints
// always go to the API (see the hook below).
// Redirects are the transport's business: Steward's (redirects.ts) and Node's fetch both drop
// Authorization when a redirect leaves the origin.
import type { Octokit } from "@octokit/core";

type Fetch = typeof globalThis.fetch;

/** Origins a client for the API at `baseUrl` sends its credentials to. */
export function credentialOrigins(baseUrl: string): ReadonlySet<string> {
  const origin = new URL(baseUrl).origin;
  // github.com takes release asset uploads on a host of their own (a release's `upload_url`);
  // GitHub Enterprise Server takes them on its API host.
  return new Set(origin === "https://api.github.com" ? [origin, "https://uploads.github.com"] : [origin]);
}

function urlOf(input: Parameters<Fetch>[0]): string {
  return typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
}

function withoutAuthorization(init: RequestInit | undefined): RequestInit | undefined {
  const headers = init?.headers;
  if (!headers) return init;
  if (headers instanceof Headers || Array.isArray(headers)) {
    const copy = new Headers(headers);
    copy.delete("authorization");
    return { ...init, headers: copy };
  }
  const copy: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers as Record<string, string>))
    if (name.toLowerCase() !== "authorization") copy[name] = value;
  return { ...init, headers: copy };
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

const guarded = new WeakSet<Fetch>();

function guard(inner: Fetch, allowed: ReadonlySet<string>): Fetch {
  if (guarded.has(inner)) return inner;
  const fetch: Fetch = (input, init) => {
    const origin = originOf(urlOf(input));
    return inner(input, origin !== undefined && allowed.has(origin) ? init : withoutAuthorization(init));
  };
  guarded.add(fetch);
  return fetch;
}

/** Octokit plugin: credentials go only to the API origin the client was built with (not one a request names). */
export function credentialsToApiOnly(octokit: Octokit): Record<string, never> {
  const apiBase = octokit.request.endpoint.DEFAULTS.baseUrl;
  const allowed = credentialOrigins(apiBase);
  octokit.hook.wrap("request", (request, options) => {
    // A `baseUrl` given with one request is where the authentication strategy would also mint the
    // installation token, and the answer from elsewhere would be cached as the installation's token
    // for every module: the request goes to its full URL instead, and authentication to the API.
    if (
      typeof options.baseUrl === "string" &&
      options.baseUrl !== apiBase &&
      !allowed.has(originOf(options.baseUrl) ?? "")
    ) {
      if (!/^https?:\/\//i.test(options.url)) options.url = `${options.baseUrl}${options.url}`;
      options.baseUrl = apiBase;
    }
    // Set on the request's options in place (every hook of a request sees the one object); a copy
    // of `request`, which may be the client's defaults shared by all its requests. A retry passes
    // here again with the guarded fetch, which is kept as it is.
    const own = (options.request ?? {}) as { fetch?: Fetch };
    options.request = { ...own, fetch: guard(own.fetch ?? globalThis.fetch, allowed) };
    return request(options);
  });
  return {};
}
