// Shared set-up of the hub core tests: a hub, Octokit clients for its credentials, and a
// webhook receiver that records what it got.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { Probot, ProbotOctokit } from "probot";
import { createHub, type CreateHubOptions, type HubHandle } from "../src/hub.js";

export const silent = { debug() {}, info() {}, warn() {}, error() {} };

export async function startHub(opts: CreateHubOptions = {}): Promise<HubHandle> {
  return createHub(opts);
}

/** Octokit with a fixed credential and no retries or throttling, so the tests see every answer. */
export function tokenOctokit(hub: HubHandle, token?: string) {
  return new ProbotOctokit({
    ...(token ? { auth: { token } } : {}),
    baseUrl: hub.url,
    throttle: { enabled: false },
    retry: { enabled: false },
    log: silent,
  });
}

export function probotFor(hub: HubHandle): Probot {
  return new Probot({
    appId: Number(hub.env.APP_ID),
    privateKey: hub.env.PRIVATE_KEY,
    baseUrl: hub.url,
    log: pino({ level: "silent" }),
  });
}

/** An installation token straight from the API. */
export async function installationToken(
  hub: HubHandle,
  installationId: number,
  body: Record<string, unknown> = {},
): Promise<string> {
  const app = await probotFor(hub).auth();
  const { data } = await app.request("POST /app/installations/{installation_id}/access_tokens", {
    installation_id: installationId,
    ...body,
  });
  return data.token;
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on 127.0.0.1: answers `status` (default 202) and records each request. */
export async function startReceiver(status: () => number = () => 202) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(status(), { "Content-Type": "application/json" });
      res.end(JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    received,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
