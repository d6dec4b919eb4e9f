// A fetch that follows redirects the way the API asks (seeds "Errors"): 301/308 are
// permanent (remembered, so later requests go straight to the new URI), 302/307 repeat
// the request verbatim (same method and body) at Location, 303 turns into a GET. The
// Authorization header is dropped when a redirect leaves the origin (e.g. a log or
// artifact download on a storage host). A caller passing `redirect: "manual"` gets the
// 3xx itself, to read its Location.

type Fetch = typeof globalThis.fetch;

const MAX_HOPS = 10;
const MAX_REMEMBERED = 1_000;

function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

function withoutAuthorization(headers: RequestInit["headers"]): Headers {
  const copy = new Headers(headers);
  copy.delete("authorization");
  return copy;
}

export interface RedirectingFetch {
  fetch: Fetch;
  /** Permanent redirects learnt so far (old URL -> new URL). */
  readonly permanent: ReadonlyMap<string, string>;
}

export function createRedirectingFetch(base: Fetch = globalThis.fetch): RedirectingFetch {
  const permanent = new Map<string, string>();
  const remember = (from: string, to: string) => {
    permanent.set(from, to);
    if (permanent.size > MAX_REMEMBERED) permanent.delete(permanent.keys().next().value as string);
  };

  const fetch: Fetch = async (input, init = {}) => {
    if (init.redirect === "manual" || init.redirect === "error") return base(input, init);
    let url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    url = permanent.get(url) ?? url;
    let current: RequestInit = { ...init, redirect: "manual" };
    const origin = new URL(url).origin;
    const firstUrl = url;
    for (let hop = 0; ; hop++) {
      const response = await base(url, current);
      const location = response.headers.get("location");
      if (!isRedirect(response.status) || !location) return response;
      if (hop >= MAX_HOPS) throw new TypeError(`too many redirects from ${firstUrl}`);
      await response.body?.cancel();
      const next = new URL(location, url).href;
      if (response.status === 301 || response.status === 308) remember(url, next);
      if (response.status === 303) {
        const { body: _body, ...rest } = current;
        current = { ...rest, method: "GET" };
      }
      if (new URL(next).origin !== origin) current = { ...current, headers: withoutAuthorization(current.headers) };
      url = next;
    }
  };
  return { fetch, permanent };
}
