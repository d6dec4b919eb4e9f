// Conditional GETs (If-None-Match). When the ETag sent still matches, GitHub answers 304 Not
// Modified, and a 304 does not count against the rate limit. Octokit reports a 304 as a
// RequestError (status 304); `requestIfChanged` turns that into an ordinary result, so callers
// never mistake "unchanged" for a failure. Used by the policy loader (its own file cache) and,
// with the bounded `ResponseCache` below, by the secrets sync's list reads.
//
// GitHub's ETags are specific to the token that read them: after an installation token is
// renewed (hourly), the first conditional request of a resource answers 200 with a new ETag.
// Caching them beyond the life of the process (or across replicas, which hold their own tokens)
// would therefore buy nothing, so the cache here lives in memory.

export interface RawResponse {
  status: number;
  headers: Record<string, string | number | undefined>;
  data: unknown;
}

/** A request function in Octokit's plain form: `request("GET /path/{x}", params)`. */
export type RequestFn = (route: string, params: Record<string, unknown>) => Promise<RawResponse>;

/** Octokit's `request` is overloaded per route; conditional reads only need the plain form. */
export function requestFnOf(octokit: { request: unknown }): RequestFn {
  return (route, params) => (octokit as { request: RequestFn }).request(route, params);
}

export type ConditionalAnswer =
  | { changed: true; response: RawResponse; etag: string | undefined }
  /** 304: the caller's copy is current. `headers` are the 304's own (rate limit, date). */
  | { changed: false; headers: Record<string, string | number | undefined> };

function statusOf(error: unknown): number | undefined {
  const s = (error as { status?: unknown })?.status;
  return typeof s === "number" ? s : undefined;
}

function etagOf(headers: Record<string, string | number | undefined> | undefined): string | undefined {
  const e = headers?.etag;
  return typeof e === "string" && e !== "" ? e : undefined;
}

/**
 * GET `route` with `If-None-Match: etag` (a plain GET without an etag). A 304 comes back as
 * `{ changed: false }`, never thrown; every other error is rethrown untouched.
 */
export async function requestIfChanged(
  request: RequestFn,
  route: string,
  params: Record<string, unknown>,
  etag: string | undefined,
): Promise<ConditionalAnswer> {
  const headers = {
    ...(params.headers as Record<string, string> | undefined),
    ...(etag ? { "if-none-match": etag } : {}),
  };
  try {
    const response = await request(route, { ...params, headers });
    return { changed: true, response, etag: etagOf(response.headers) };
  } catch (e) {
    if (etag && statusOf(e) === 304) {
      const h = (e as { response?: { headers?: Record<string, string | number | undefined> } }).response?.headers ?? {};
      return { changed: false, headers: h };
    }
    throw e;
  }
}

/** What is kept of one GET's answer: its ETag, its body as JSON, and its `Link` (pagination). */
export interface CachedAnswer {
  etag: string;
  body: string;
  link?: string;
}

export interface ResponseCacheOptions {
  /** Answers kept at most (default 50,000; least recently used go first). */
  maxEntries?: number;
  /** Total body bytes kept at most (default 32 MiB). */
  maxBytes?: number;
}

/**
 * ETags and bodies of GET answers, keyed by the caller (e.g. installation and URL), bounded in
 * entries and bytes, least recently used first out. Bodies are kept as JSON text, so no caller
 * can change a cached answer by mutating what it was handed.
 */
export class ResponseCache {
  private readonly entries = new Map<string, CachedAnswer>();
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private bytesHeld = 0;
  /** Conditional requests sent, and how many of them were answered 304. */
  readonly stats = { conditional: 0, notModified: 0 };

  constructor(opts: ResponseCacheOptions = {}) {
    this.maxEntries = opts.maxEntries ?? 50_000;
    this.maxBytes = opts.maxBytes ?? 32 * 2 ** 20;
  }

  get size(): number {
    return this.entries.size;
  }

  get bytes(): number {
    return this.bytesHeld;
  }

  get(key: string): CachedAnswer | undefined {
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key); // re-insert: Map order is the LRU order
      this.entries.set(key, entry);
    }
    return entry;
  }

  set(key: string, entry: CachedAnswer): void {
    this.delete(key);
    const size = entry.body.length + key.length;
    if (size > this.maxBytes) return;
    this.entries.set(key, entry);
    this.bytesHeld += size;
    while (this.entries.size > this.maxEntries || this.bytesHeld > this.maxBytes) {
      this.delete(this.entries.keys().next().value!);
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytesHeld -= entry.body.length + key.length;
  }

  /** Drop every answer whose key starts with `prefix` (e.g. one installation's). */
  clear(prefix = ""): void {
    for (const key of [...this.entries.keys()]) if (key.startsWith(prefix)) this.delete(key);
  }
}

/**
 * A GET through `cache`: sent with the cached ETag; a 304 answers with the cached body (status
 * 304, the 304's own headers over the cached `Link`), a 200 replaces the entry, a 404 or 410
 * drops it. Answers without an ETag are not kept.
 */
export async function cachedGet(
  request: RequestFn,
  cache: ResponseCache,
  key: string,
  route: string,
  params: Record<string, unknown>,
): Promise<RawResponse> {
  const cached = cache.get(key);
  if (cached) cache.stats.conditional++;
  let answer: ConditionalAnswer;
  try {
    answer = await requestIfChanged(request, route, params, cached?.etag);
  } catch (e) {
    const status = statusOf(e);
    if (status === 404 || status === 410) cache.delete(key);
    throw e;
  }
  if (!answer.changed) {
    cache.stats.notModified++;
    const headers = { ...(cached!.link ? { link: cached!.link } : {}), ...answer.headers, etag: cached!.etag };
    return { status: 304, headers, data: JSON.parse(cached!.body) as unknown };
  }
  const { response, etag } = answer;
  if (etag && response.status === 200) {
    const link = response.headers.link;
    cache.set(key, {
      etag,
      body: JSON.stringify(response.data ?? null),
      ...(typeof link === "string" && link !== "" ? { link } : {}),
    });
  } else {
    cache.delete(key);
  }
  return response;
}
