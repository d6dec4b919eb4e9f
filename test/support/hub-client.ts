// A sandbox hub (demo world) and Steward's own API client for its installation on `acme`, for
// tests that call a handler or the check reporter directly. No retries, so every answer reaches
// the code under test as the hub gave it. `sent` records what the client sent (the hub's request
// log keeps no bodies) with the status it got back (0 when the connection was lost); token
// requests of the auth strategy are left out.
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { ProbotOctokit } from "probot";
import { createOctokitFactory } from "../../src/api/client.js";
import { inProcessCoordination } from "../../src/coordination/in-process.js";
import { loadConfig } from "../../src/config/env.js";
import type { InstallationOctokit } from "../../src/handler.js";
import { createHub, type CreateHubOptions, type HubHandle } from "../../src/sandbox/hub.js";

export interface SentRequest {
  /** Whose client sent it: `installation`, or the login of a user client. */
  as: string;
  method: string;
  /** Path without the query. */
  path: string;
  query: URLSearchParams;
  body: any;
  status: number;
}

export interface HubClient {
  hub: HubHandle;
  appId: number;
  installationId: number;
  octokit: InstallationOctokit;
  /** A client with the personal token of a hub user (e.g. a required reviewer), recorded in `sent` too. */
  userOctokit(login: string): InstallationOctokit;
  sent: SentRequest[];
  /** Requests the hub answered for the installation since `from` (an index into its log). */
  installationRequests(from?: number): ReturnType<HubHandle["control"]["requests"]>;
  close(): Promise<void>;
}

export async function startHubClient(opts: CreateHubOptions = {}): Promise<HubClient> {
  // The hub records a delivery once it was sent somewhere: a sink that accepts them, so tests
  // can hand the hub's own payloads (control.waitForDeliveries) to the code under test.
  const sink = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(202).end());
  });
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  const hub = await createHub({ webhookUrl: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`, ...opts });
  const installation = hub.control.installation("acme")!;
  const dir = await mkdtemp(join(tmpdir(), "steward-hub-client-"));
  const logger = pino({ level: "silent" });
  const config = loadConfig({ ...hub.env, PRIVATE_KEY: undefined, STEWARD_DATA_DIR: dir, LOG_LEVEL: "silent" });
  const octokit = await createOctokitFactory({
    config,
    logger,
    coordination: inProcessCoordination(),
    retries: 0,
    writeIntervalMs: 0,
  }).octokitFor(installation.id);
  const sent: SentRequest[] = [];
  const recorded = (client: InstallationOctokit, as: string) => {
    client.hook.wrap("request", async (request, options) => {
      const parsed = client.request.endpoint(options as never) as { method: string; url: string; body?: unknown };
      const url = new URL(parsed.url, hub.url);
      // The auth strategy mints tokens through this client too; those are not the code's requests.
      if (url.pathname.startsWith("/app/")) return request(options);
      const record: SentRequest = {
        as,
        method: parsed.method,
        path: decodeURIComponent(url.pathname),
        query: url.searchParams,
        body: parsed.body,
        status: 0,
      };
      sent.push(record);
      try {
        const response = await request(options);
        record.status = response.status;
        return response;
      } catch (err) {
        record.status = (err as { status?: number }).status ?? 0;
        throw err;
      }
    });
    return client;
  };
  recorded(octokit, "installation");
  return {
    hub,
    appId: hub.hub.appId,
    installationId: installation.id,
    octokit,
    userOctokit: (login) =>
      recorded(
        new ProbotOctokit({
          auth: { token: hub.control.userToken(login) },
          baseUrl: hub.url,
          retry: { enabled: false },
          throttle: { enabled: false },
          log: logger,
        }) as InstallationOctokit,
        login,
      ),
    sent,
    installationRequests: (from = 0) =>
      hub.control
        .requests()
        .slice(from)
        .filter((r) => r.auth === "installation"),
    async close() {
      await hub.close();
      sink.closeAllConnections();
      await new Promise((resolve) => sink.close(resolve));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
