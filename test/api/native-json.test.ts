// API answers parsed with JSON.parse (src/api/native-json.ts): what Octokit's own parse would
// give for every kind of body, through the client the service builds, over real HTTP.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOctokitFactory } from "../../src/api/client.js";
import { parseBody } from "../../src/api/native-json.js";
import { collectingLogger, testConfig } from "../service/helpers.js";

const body = (text: string | Uint8Array) => new Response(text).body!;

describe("parseBody", () => {
  it("parses JSON by media type, with or without parameters", async () => {
    expect(await parseBody(body('{"a":[1,2],"b":null}'), "application/json; charset=utf-8")).toEqual({ a: [1, 2], b: null });
    expect(await parseBody(body('{"Resources":[]}'), "application/scim+json")).toEqual({ Resources: [] });
  });

  it("keeps a JSON body that does not parse as its text, and an empty one as the empty string", async () => {
    expect(await parseBody(body("{not json"), "application/json")).toBe("{not json");
    expect(await parseBody(body(""), "application/json")).toBe("");
  });

  it("gives text for text/* and UTF-8 bodies, bytes for binary ones, text when no type is given", async () => {
    expect(await parseBody(body("line 1\nline 2"), "text/plain")).toBe("line 1\nline 2");
    expect(await parseBody(body("diff --git"), "application/vnd.github.diff; charset=utf-8")).toBe("diff --git");
    const bytes = await parseBody(body(new Uint8Array([0x50, 0x4b, 3, 4])), "application/zip");
    expect(bytes).toBeInstanceOf(ArrayBuffer);
    expect([...new Uint8Array(bytes as ArrayBuffer)]).toEqual([0x50, 0x4b, 3, 4]);
    expect(await parseBody(body(new Uint8Array([1, 2])), "application/octet-stream; charset=utf-8")).toBeInstanceOf(ArrayBuffer);
    expect(await parseBody(body("plain"), undefined)).toBe("plain");
  });
});

describe("the API client's answers", () => {
  let server: Server;
  let url: string;
  const answers: Record<string, { type: string; body: string }> = {
    "/app": { type: "application/json; charset=utf-8", body: '{"id":9007199254740993,"slug":"steward","owner":{"id":1}}' },
    "/app/hook/config": { type: "text/plain; charset=utf-8", body: "plain words" },
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const answer = answers[req.url ?? ""];
      if (!answer) {
        res.writeHead(404, { "content-type": "application/json" }).end('{"message":"Not Found"}');
        return;
      }
      res.writeHead(200, { "content-type": answer.type }).end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  async function appClient() {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
    const factory = createOctokitFactory({ config: testConfig({ privateKey, apiUrl: url }), logger: collectingLogger().logger, retries: 0 });
    return factory.appOctokit();
  }

  it("parses JSON with JSON.parse: an integer past 2^53 is a number, not a BigInt", async () => {
    const app = await appClient();
    const { data } = await app.request("GET /app");
    // Octokit's own parse makes this a BigInt (and broken every JSON.stringify of it).
    expect(typeof data?.id).toBe("number");
    expect(data).toEqual({ id: 9007199254740992, slug: "steward", owner: { id: 1 } });
    expect(() => JSON.stringify(data)).not.toThrow();
  });

  it("gives text bodies as text, a caller asking for the raw body its stream, and errors as before", async () => {
    const app = await appClient();
    expect((await app.request("GET /app/hook/config")).data).toBe("plain words");
    const raw = await app.request("GET /app/hook/config", { request: { parseSuccessResponseBody: false } });
    expect(raw.data).toBeInstanceOf(ReadableStream);
    expect(await new Response(raw.data as unknown as ReadableStream).text()).toBe("plain words");
    await expect(app.request("GET /app/installations/{installation_id}", { installation_id: 1 })).rejects.toMatchObject({ status: 404, response: { data: { message: "Not Found" } } });
  });
});
