import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BUFFER_LIMIT, createHttpFetch, handOverWhole, wholeBody, type HttpFetch } from "../../src/api/http-fetch.js";

type Handler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void;

let server: Server;
let base: string;
let handler: Handler;
let connections: number;
let transport: HttpFetch;

beforeEach(async () => {
  connections = 0;
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handler(req, Buffer.concat(chunks), res));
  });
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  transport = createHttpFetch();
});

afterEach(async () => {
  transport.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("createHttpFetch", () => {
  it("answers a GET with its status, headers and body, read whole and as a stream", async () => {
    handler = (req, _body, res) => {
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "x-ratelimit-remaining": "4999", "set-cookie": ["a=1", "b=2"] });
      res.end(JSON.stringify({ path: req.url, auth: req.headers.authorization ?? null }));
    };
    const response = await transport.fetch(`${base}/repos/o/r?page=2`, { headers: { authorization: "token t", accept: "application/vnd.github+json" } });
    expect(response.status).toBe(200);
    expect(response.ok).toBe(true);
    expect(response.url).toBe(`${base}/repos/o/r?page=2`);
    expect(response.headers.get("x-ratelimit-remaining")).toBe("4999");
    expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(Object.fromEntries(response.headers)).toMatchObject({ "content-type": "application/json; charset=utf-8" });
    // The body as a stream is the same bytes, and the transport can hand them over whole.
    const stream = response.body!;
    expect(wholeBody(stream)?.toString("utf8")).toBe(JSON.stringify({ path: "/repos/o/r?page=2", auth: "token t" }));
    expect(await response.json()).toEqual({ path: "/repos/o/r?page=2", auth: "token t" });
    expect(response.bodyUsed).toBe(true);
    await expect(response.text()).rejects.toThrow(/already been read/);
  });

  it("reads an answer's headers as fetch's Headers reads the same ones, and refuses to change them", async () => {
    const raw = ["Content-Type", "application/json", "X-Repeat", "one", "Link", "<a>; rel=\"next\"", "x-repeat", "two", "ETag", "W/\"abc\"", "Set-Cookie", "a=1", "set-cookie", "b=2"];
    handler = (_req, _body, res) => {
      res.sendDate = false;
      res.writeHead(200, raw);
      res.end("{}");
    };
    const response = await transport.fetch(`${base}/h`);
    // The reference: Node's own fetch reading the same answer (the server's own headers included).
    const expected = (await fetch(`${base}/h`)).headers;
    expect(expected.get("x-repeat")).toBe("one, two");
    const { headers } = response;
    expect([...headers]).toEqual([...expected]);
    expect([...headers.keys()]).toEqual([...expected.keys()]);
    expect([...headers.values()]).toEqual([...expected.values()]);
    for (const name of ["x-repeat", "X-REPEAT", "etag", "link", "set-cookie", "missing"]) {
      expect(headers.get(name)).toBe(expected.get(name));
      expect(headers.has(name)).toBe(expected.has(name));
    }
    expect(headers.getSetCookie()).toEqual(expected.getSetCookie());
    const seen: string[] = [];
    headers.forEach((value, name) => seen.push(`${name}=${value}`));
    expect(seen).toEqual([...expected].map(([n, v]) => `${n}=${v}`));
    expect(() => headers.set("etag", "x")).toThrow(TypeError);
    expect(() => headers.append("etag", "x")).toThrow(TypeError);
    expect(() => headers.delete("etag")).toThrow(TypeError);
    expect(headers.get("etag")).toBe('W/"abc"');
  });

  it("hands a whole answer's body over as a handle on its bytes when asked, and as a stream otherwise", async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"n":1}');
    };
    const handed = handOverWhole(await transport.fetch(`${base}/a`));
    expect(handed.body).not.toBeInstanceOf(ReadableStream);
    expect(wholeBody(handed.body)?.toString("utf8")).toBe('{"n":1}');
    expect(await handed.json()).toEqual({ n: 1 });
    const streamed = await transport.fetch(`${base}/b`);
    expect(streamed.body).toBeInstanceOf(ReadableStream);
    expect(await new Response(streamed.body).text()).toBe('{"n":1}');
    // A response of another fetch is left as it is.
    const other = new Response("x");
    expect(handOverWhole(other).body).toBeInstanceOf(ReadableStream);
  });

  it("sends a body with its length, and the method asked for", async () => {
    handler = (req, body, res) => {
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ method: req.method, length: req.headers["content-length"], chunked: req.headers["transfer-encoding"] ?? null, body: body.toString("utf8") }));
    };
    const text = JSON.stringify({ name: "ü" });
    const response = await transport.fetch(`${base}/x`, { method: "PATCH", body: text, headers: { "content-type": "application/json" } });
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ method: "PATCH", length: String(Buffer.byteLength(text)), chunked: null, body: text });
    const bytes = await transport.fetch(`${base}/x`, { method: "PUT", body: new Uint8Array([104, 105]) });
    expect(await bytes.json()).toMatchObject({ method: "PUT", length: "2", body: "hi" });
  });

  it("hands a redirect back to the caller with its Location instead of following it", async () => {
    handler = (_req, _body, res) => {
      res.writeHead(302, { location: "http://127.0.0.1:1/elsewhere" });
      res.end();
    };
    const response = await transport.fetch(`${base}/logs`, { redirect: "manual" });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("http://127.0.0.1:1/elsewhere");
  });

  it("gives no body for 204 and 304 and reads HEAD answers without one", async () => {
    handler = (req, _body, res) => {
      res.writeHead(req.url === "/none" ? 204 : 200, { "content-length": "5" });
      res.end(req.method === "HEAD" || req.url === "/none" ? undefined : "hello");
    };
    const none = await transport.fetch(`${base}/none`, { method: "DELETE" });
    expect(none.status).toBe(204);
    expect(none.body).toBeNull();
    expect(await none.text()).toBe("");
    const head = await transport.fetch(`${base}/head`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.body).toBeNull();
  });

  it("decodes a gzip-encoded answer", async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" });
      res.end(gzipSync(Buffer.from("compressed log text")));
    };
    expect(await (await transport.fetch(`${base}/log`)).text()).toBe("compressed log text");
  });

  it("hands an answer larger than it holds over as a stream, every byte of it", async () => {
    const size = BUFFER_LIMIT + 1024 * 1024 + 7;
    handler = (_req, _body, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      let sent = 0;
      const more = () => {
        while (sent < size) {
          const part = chunk.subarray(0, Math.min(chunk.length, size - sent));
          sent += part.length;
          if (!res.write(part)) return void res.once("drain", more);
        }
        res.end();
      };
      more();
    };
    const response = await transport.fetch(`${base}/archive`);
    const stream = response.body!;
    expect(wholeBody(stream)).toBeUndefined();
    let total = 0;
    for await (const part of stream) {
      total += part.byteLength;
      expect(part.every((b: number) => b === 0x61)).toBe(true);
    }
    expect(total).toBe(size);
  });

  it("rejects with the signal's reason and closes the exchange when aborted", async () => {
    let closed!: () => void;
    const serverSawClose = new Promise<void>((resolve) => (closed = resolve));
    handler = (req, _body, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("{");
      req.socket.once("close", closed);
    };
    const controller = new AbortController();
    const pending = transport.fetch(`${base}/slow`, { signal: controller.signal });
    const reason = new Error("stopping");
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);
    await serverSawClose;
    // Already aborted: nothing is sent.
    const before = connections;
    await expect(transport.fetch(`${base}/never`, { signal: controller.signal })).rejects.toBe(reason);
    expect(connections).toBe(before);
  });

  it("fails as fetch does when nothing answers", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await transport.fetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe("fetch failed");
    expect(((error as TypeError).cause as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
  });

  it("keeps one connection alive for requests one after another", async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    };
    for (let i = 0; i < 5; i++) await (await transport.fetch(`${base}/n/${i}`)).json();
    expect(connections).toBe(1);
  });

  it("leaves a streamed body to the fallback fetch, which sends it", async () => {
    handler = (_req, body, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end(`got ${body.toString("utf8")}`);
    };
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode("streamed"));
        c.close();
      },
    });
    const response = await transport.fetch(`${base}/upload`, { method: "POST", body, duplex: "half" } as RequestInit);
    expect(await response.text()).toBe("got streamed");
    // The fallback is Node's own fetch: its Response is the standard one.
    expect(response).toBeInstanceOf(Response);
  });
});
