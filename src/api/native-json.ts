// Answers parsed with V8's own JSON.parse. Octokit's request parses every JSON answer with a
// library that keeps integers past 2^53 as BigInt; on Node 20 (no reviver `context.source`) it
// does so with a regular-expression pass over the whole text and a reviver called for every value,
// several times the cost of the parse itself, on every answer (a jobs list, a check run, a
// contents read) and on the event loop that answers deliveries. GitHub's ids are all below 2^53
// (the REST docs type them `integer`, and its own clients read them as doubles), and a BigInt
// would not survive the JSON.stringify the store and the audit log do anyway.
//
// Successful answers are taken unparsed from Octokit (`parseSuccessResponseBody: false`) and
// parsed here as Octokit would (JSON by media type, text for text/* and UTF-8, bytes otherwise);
// a caller that asked for the body unparsed itself (a stream) gets it untouched. Error answers
// (4xx, 5xx, 304) are still parsed by Octokit: they are few and carry small bodies.
import { handOverWhole, wholeBody } from "./http-fetch.js";
import type { InstallationOctokit } from "./types.js";

const JSON_TYPES = /^application\/(?:json|scim\+json)\s*(?:;|$)/i;
const UTF8 = /;\s*charset\s*=\s*"?utf-8"?/i;

/** What Octokit's own parse would make of `body` answered with `contentType`. */
export async function parseBody(body: ReadableStream<Uint8Array>, contentType: string | undefined): Promise<unknown> {
  // The transport's answers are held whole (http-fetch.ts): read as bytes, not through the stream.
  const whole = wholeBody(body);
  const response = whole ? { text: async () => whole.toString("utf8"), arrayBuffer: async () => whole.buffer.slice(whole.byteOffset, whole.byteOffset + whole.length) } : new Response(body);
  if (contentType === undefined) return response.text();
  if (JSON_TYPES.test(contentType)) {
    const text = await response.text();
    try {
      return JSON.parse(text);
    } catch {
      // Octokit's answer to a body that is not JSON after all: the text.
      return text;
    }
  }
  const type = contentType.split(";", 1)[0]!.trim().toLowerCase();
  if (type.startsWith("text/") || (UTF8.test(contentType) && type !== "application/octet-stream")) return response.text();
  return response.arrayBuffer();
}

/** Every successful answer of `octokit` parsed with JSON.parse instead of Octokit's BigInt-aware parse. */
export function parseAnswersNatively(octokit: InstallationOctokit): void {
  octokit.hook.wrap("request", async (request, options) => {
    const own = options.request as { parseSuccessResponseBody?: boolean } | undefined;
    if (own?.parseSuccessResponseBody === false) return request(options);
    // Octokit hands the answer's body over untouched; parseBody reads the transport's bytes behind it.
    const send = (own as { fetch?: typeof fetch } | undefined)?.fetch ?? globalThis.fetch;
    const fetchWhole = (input: Parameters<typeof fetch>[0], init?: RequestInit) => send(input, init).then(handOverWhole);
    options.request = { ...own, parseSuccessResponseBody: false, fetch: fetchWhole } as typeof options.request;
    const response = await request(options);
    const body = response.data as unknown;
    if (wholeBody(body) !== undefined || body instanceof ReadableStream) {
      const contentType = response.headers["content-type"];
      response.data = (await parseBody(body as ReadableStream<Uint8Array>, typeof contentType === "string" ? contentType : undefined)) as typeof response.data;
    } else if (body === null) {
      // No body at all (Octokit hands over `fetchResponse.body`): what its parse makes of an empty one.
      response.data = "" as typeof response.data;
    }
    return response;
  });
}
