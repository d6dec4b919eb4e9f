// The API client's transport: node:http(s) on kept-alive connections, answering with the part
// of fetch's Response that Octokit and this client read. Node's fetch (undici behind the WHATWG
// interfaces) spent 450-530 µs of the event loop on one small GET on a 2-core VM, against
// 210-250 µs for node:http, and left about as much again to the garbage collector: web streams,
// a Request, AbortSignals and Headers for every exchange. A handler's decision is several API
// calls in a row, each answered on the loop that also takes deliveries, so that cost was most of
// the re-run's end-to-end latency (see test/bench/analysis.md).
//
// An answer up to BUFFER_LIMIT is read whole before the promise resolves (an API answer is a
// JSON document; Octokit reads it whole anyway) and handed over as bytes, without a web stream
// unless one is asked for. A larger answer (an archive a handler downloads) is handed over as a
// stream once the limit is passed, so nothing unbounded is held. Bodies this transport cannot
// send as they are (streams, forms, blobs) go to the fetch given as `fallback`.
import http from "node:http";
import https from "node:https";
import { Readable } from "node:stream";
import zlib from "node:zlib";

type Fetch = typeof globalThis.fetch;

/** Answers are kept whole in memory up to this many bytes (after decompression); larger ones stream. */
export const BUFFER_LIMIT = 8 * 1024 * 1024;

/** How long a kept-alive connection may sit unused before it is closed (GitHub closes idle ones too). */
const IDLE_MS = 4_000;

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** Streams made by this transport over a body it holds whole, so a reader wanting all of it skips the stream. */
const wholeBodies = new WeakMap<object, Buffer>();

/** The bytes behind `body` when it is a stream this transport made over an answer it holds whole. */
export function wholeBody(body: unknown): Buffer | undefined {
  return body && typeof body === "object" ? wholeBodies.get(body) : undefined;
}

function streamOf(bytes: Buffer): ReadableStream<Uint8Array> {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      if (bytes.length > 0) controller.enqueue(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length));
      controller.close();
    },
  });
  wholeBodies.set(stream, bytes);
  return stream;
}

/** A stand-in for a stream over `bytes`, which only `wholeBody` reads. */
function handleOf(bytes: Buffer): ReadableStream<Uint8Array> {
  const handle = Object.freeze({});
  wholeBodies.set(handle, bytes);
  return handle as ReadableStream<Uint8Array>;
}

/**
 * For a reader that takes `response.body` only to hand it to `wholeBody`: the body read from
 * `response` is then a handle on the bytes rather than a web stream over them (building one
 * costs more of the event loop than parsing a small answer). Nothing for other responses.
 */
export function handOverWhole(response: Response): Response {
  if (response instanceof NodeResponse) response.handOverWhole();
  return response;
}

/** The Response members Octokit, the redirecting fetch and the client's observers read. */
class NodeResponse {
  readonly ok: boolean;
  readonly redirected = false;
  readonly type = "basic";
  #bytes: Buffer | undefined;
  #stream: ReadableStream<Uint8Array> | null | undefined;
  #used = false;
  #handle = false;

  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly headers: Headers,
    readonly url: string,
    body: { bytes: Buffer } | { stream: ReadableStream<Uint8Array> } | null,
  ) {
    this.ok = status >= 200 && status < 300;
    if (body === null) this.#stream = null;
    else if ("bytes" in body) this.#bytes = body.bytes;
    else this.#stream = body.stream;
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#stream === undefined) this.#stream = this.#handle ? handleOf(this.#bytes!) : streamOf(this.#bytes!);
    return this.#stream;
  }

  /** See `handOverWhole`. */
  handOverWhole(): void {
    this.#handle = true;
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.#take();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer;
  }

  async bytes(): Promise<Uint8Array> {
    return new Uint8Array(await this.#take());
  }

  async text(): Promise<string> {
    return (await this.#take()).toString("utf8");
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  clone(): never {
    throw new TypeError("this API client's responses cannot be cloned");
  }

  async #take(): Promise<Buffer> {
    if (this.#used) throw new TypeError("Body is unusable: Body has already been read");
    this.#used = true;
    if (this.#stream === null) return Buffer.alloc(0);
    if (this.#stream === undefined || wholeBodies.has(this.#stream)) return this.#bytes ?? wholeBodies.get(this.#stream!)!;
    const chunks: Buffer[] = [];
    for await (const chunk of this.#stream) chunks.push(Buffer.from(chunk));
    return Buffer.concat(chunks);
  }
}

/**
 * An answer's headers as fetch's `Headers` reads them (names case-insensitive, repeated ones
 * joined with ", ", iterated by name), without building an undici `Headers` for every answer:
 * Octokit copies them all into an object, and nothing changes an answer's headers.
 */
class AnswerHeaders {
  readonly #values = new Map<string, string>();
  #cookies: string[] | undefined;

  constructor(raw: string[]) {
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      const value = raw[i + 1]!.trim();
      if (name === "set-cookie") (this.#cookies ??= []).push(value);
      const had = this.#values.get(name);
      this.#values.set(name, had === undefined ? value : `${had}, ${value}`);
    }
  }

  get(name: string): string | null {
    return this.#values.get(name.toLowerCase()) ?? null;
  }

  has(name: string): boolean {
    return this.#values.has(name.toLowerCase());
  }

  getSetCookie(): string[] {
    return [...(this.#cookies ?? [])];
  }

  *entries(): IterableIterator<[string, string]> {
    const names = [...this.#values.keys()].sort();
    for (const name of names) {
      if (name === "set-cookie") for (const cookie of this.#cookies!) yield [name, cookie];
      else yield [name, this.#values.get(name)!];
    }
  }

  *keys(): IterableIterator<string> {
    for (const [name] of this.entries()) yield name;
  }

  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }

  forEach(fn: (value: string, name: string, headers: this) => void, thisArg?: unknown): void {
    for (const [name, value] of this.entries()) fn.call(thisArg, value, name, this);
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }

  // An answer's headers are immutable, as fetch's are.
  append(): never {
    throw new TypeError("immutable");
  }

  set(): never {
    throw new TypeError("immutable");
  }

  delete(): never {
    throw new TypeError("immutable");
  }
}

function headersOf(raw: string[]): Headers {
  return new AnswerHeaders(raw) as unknown as Headers;
}

function requestHeaders(init: RequestInit["headers"]): Record<string, string> {
  if (!init) return {};
  if (init instanceof Headers || Array.isArray(init)) return Object.fromEntries(init as Iterable<[string, string]>);
  return { ...(init as Record<string, string>) };
}

/** The body as bytes when it is one this transport sends as it is; undefined for none; null for one it cannot. */
function bytesOf(body: RequestInit["body"]): Buffer | undefined | null {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return null;
}

function decoded(res: http.IncomingMessage): Readable {
  const encoding = String(res.headers["content-encoding"] ?? "").trim().toLowerCase();
  // Errors of the decoder reach the reader through the stream it reads.
  if (encoding === "gzip" || encoding === "x-gzip") return res.pipe(zlib.createGunzip());
  if (encoding === "deflate") return res.pipe(zlib.createInflate());
  if (encoding === "br") return res.pipe(zlib.createBrotliDecompress());
  return res;
}

function failed(cause: unknown): TypeError {
  // fetch's own shape for a network error: Octokit reports the cause's message as a 500.
  return new TypeError("fetch failed", { cause });
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

export interface HttpFetch {
  fetch: Fetch;
  /** Closes the kept-alive connections (those in use close when their exchange ends). */
  close(): void;
}

/** A fetch over node:http(s) for the API client; anything it does not send itself goes to `fallback`. */
export function createHttpFetch(fallback: Fetch = globalThis.fetch): HttpFetch {
  const agents = {
    "http:": new http.Agent({ keepAlive: true, timeout: IDLE_MS, scheduling: "lifo" }),
    "https:": new https.Agent({ keepAlive: true, timeout: IDLE_MS, scheduling: "lifo" }),
  };

  const fetch = (input: Parameters<Fetch>[0], init: RequestInit = {}): Promise<Response> => {
    const href = typeof input === "string" ? input : input instanceof URL ? input.href : undefined;
    const body = bytesOf(init.body);
    // A Request object, a streamed body, or redirects to follow: fetch's own business.
    if (href === undefined || body === null || (init.redirect !== undefined && init.redirect !== "manual")) return fallback(input, init);
    const url = new URL(href);
    const agent = agents[url.protocol as keyof typeof agents];
    if (!agent) return fallback(input, init);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const headers = requestHeaders(init.headers);
    if (body !== undefined) headers["content-length"] = String(body.length);

    return new Promise<Response>((resolve, reject) => {
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        fn();
      };
      const request = (url.protocol === "https:" ? https : http).request(url, { method: init.method ?? "GET", headers, agent });
      const onAbort = () => {
        const reason = abortReason(signal!);
        request.destroy(reason instanceof Error ? reason : undefined);
        settle(() => reject(reason));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      request.on("error", (err) => settle(() => reject(failed(err))));
      request.on("response", (res) => {
        const status = res.statusCode ?? 0;
        const answer = (content: ConstructorParameters<typeof NodeResponse>[4]) =>
          new NodeResponse(status, res.statusMessage ?? "", headersOf(res.rawHeaders), href, content) as unknown as Response;
        if (NULL_BODY.has(status) || init.method === "HEAD") {
          res.resume();
          settle(() => resolve(answer(null)));
          return;
        }
        const source = decoded(res);
        const chunks: Buffer[] = [];
        let size = 0;
        const onData = (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size <= BUFFER_LIMIT) return;
          // Too large to hold: what was read and the rest, as a stream read at the reader's pace.
          source.off("data", onData);
          source.off("end", onEnd);
          source.pause();
          const rest = async function* () {
            yield* chunks.splice(0);
            for await (const more of source) yield more as Buffer;
          };
          settle(() => resolve(answer({ stream: Readable.toWeb(Readable.from(rest())) as ReadableStream<Uint8Array> })));
        };
        const onEnd = () => settle(() => resolve(answer({ bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) })));
        source.on("data", onData);
        source.on("end", onEnd);
        source.on("error", (err) => settle(() => reject(failed(err))));
      });
      request.end(body);
    });
  };

  return {
    fetch: fetch as Fetch,
    close() {
      agents["http:"].destroy();
      agents["https:"].destroy();
    },
  };
}
