// A minimal stand-in for the REST API on 127.0.0.1: it issues installation tokens for a
// real app JWT (RS256, verified against the app's public key) and lets each test script
// the answers of other routes.
import { createServer, type IncomingMessage, type ServerResponse, type Server } from "node:http";
import { createPublicKey, createVerify, generateKeyPairSync, type KeyObject } from "node:crypto";
import type { AddressInfo } from "node:net";

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
  at: number;
}

export type Route = (req: SeenRequest, res: ServerResponse) => boolean | void;

let cachedKey: { privateKey: string; publicKey: KeyObject } | undefined;
/** One RSA key per test process (generation is the slow part). */
export function appKey(): { privateKey: string; publicKey: KeyObject } {
  if (!cachedKey) {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    cachedKey = { privateKey: pem, publicKey: createPublicKey(privateKey) };
  }
  return cachedKey;
}

/** Verify an app JWT the way the API would: RS256 signature and the app id as issuer. */
export function verifyAppJwt(jwt: string, publicKey: KeyObject, appId: number): boolean {
  const [header, payload, signature] = jwt.split(".");
  if (!header || !payload || !signature) return false;
  const verifier = createVerify("RSA-SHA256");
  verifier.update(`${header}.${payload}`);
  if (!verifier.verify(publicKey, Buffer.from(signature, "base64url"))) return false;
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as { iss: unknown; exp: number };
  return String(claims.iss) === String(appId) && claims.exp * 1000 > Date.now();
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "x-ratelimit-limit": "5000", ...headers });
  res.end(JSON.stringify(body));
}

export interface FakeApi {
  url: string;
  server: Server;
  seen: SeenRequest[];
  tokensIssued: Map<number, string[]>;
  routes: Route[];
  close(): Promise<void>;
}

export async function startFakeApi(opts: { appId: number; tokenLifetimeMs?: number }): Promise<FakeApi> {
  const { publicKey } = appKey();
  const seen: SeenRequest[] = [];
  const tokensIssued = new Map<number, string[]>();
  const routes: Route[] = [];
  let counter = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      const seenReq: SeenRequest = { method: req.method ?? "GET", path, headers: req.headers, body: Buffer.concat(chunks).toString(), at: Date.now() };
      seen.push(seenReq);
      const tokenRoute = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path);
      if (tokenRoute && req.method === "POST") {
        const jwt = /^bearer (.+)$/i.exec(req.headers.authorization ?? "")?.[1] ?? "";
        if (!verifyAppJwt(jwt, publicKey, opts.appId)) return json(res, 401, { message: "Bad credentials" });
        const id = Number(tokenRoute[1]);
        counter += 1;
        const token = `v1.${id}x${counter}${"0".repeat(30)}`;
        tokensIssued.set(id, [...(tokensIssued.get(id) ?? []), token]);
        const lifetime = opts.tokenLifetimeMs ?? 3_600_000;
        return json(res, 201, {
          token,
          expires_at: new Date(Date.now() + lifetime).toISOString().replace(/\.\d{3}Z$/, "Z"),
          permissions: { checks: "write", actions: "write" },
          repository_selection: "all",
        });
      }
      // A route returns false when it does not apply, true when it will answer later.
      for (const route of routes) if (route(seenReq, res) === true || res.headersSent) return;
      json(res, 404, { message: "Not Found" });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    seen,
    tokensIssued,
    routes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
