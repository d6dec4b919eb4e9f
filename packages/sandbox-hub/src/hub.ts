// Start the sandbox hub: a real HTTP server on 127.0.0.1 simulating the REST API v3
// parts Steward uses, with an app whose key pair is made at the first start in the process.
import { generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installAccountRoutes } from "./accounts/routes.js";
import { installOAuthRoutes } from "./accounts/oauth.js";
import { installManifestRoutes } from "./accounts/manifests.js";
import { installBlobRoutes } from "./blobs/routes.js";
import { Control } from "./control.js";
import { installControlRoutes } from "./control-http.js";
import { RouteTable } from "./core/router.js";
import type { Hub } from "./core/types.js";
import { installDomains, type Domains } from "./domains.js";
import { installContentRoutes } from "./git/routes.js";
import { installPullRoutes } from "./pulls/routes.js";
import { installIssueRoutes } from "./issues/routes.js";
import { installRefRoutes } from "./refs/routes.js";
import { installReleaseRoutes } from "./releases/routes.js";
import { installGraphqlRoutes } from "./graphql/routes.js";
import { installContentWriteRoutes } from "./contents/routes.js";
import { installStatusRoutes } from "./statuses/routes.js";
import { installIssueCrudRoutes } from "./issues/issue-routes.js";
import { installReactionRoutes } from "./reactions/routes.js";
import { SandboxHub } from "./sandbox-hub.js";
import { DEMO_ORG, DEMO_REPO, seedDemo, type AppGrant } from "./seed/demo.js";
import { createHubServer } from "./server.js";
import { installWebhookRoutes } from "./webhooks/routes.js";

export interface CreateHubOptions {
  port?: number;
  /** Port of the storage host that serves log downloads (default: any free port). */
  blobPort?: number;
  webhookUrl?: string;
  webhookSecret?: string;
  contentType?: "json" | "form";
  seed?: "demo" | "empty";
  /** Permissions and events the demo seed installs the app with (default: everything the hub implements). */
  app?: AppGrant;
  /** Requests per hour per installation (default 5000). */
  rateLimit?: number;
  now?: Date;
  /** Seed of the fault-injection random generator (default 1). */
  randomSeed?: number;
  /** Bad credentials tolerated from one source within the window before lock-out (default 20 in 60 s). */
  loginAttempts?: { max: number; windowMs: number };
  /**
   * Installation tokens: `format: "stateless"` issues GitHub's ~520-character `ghs_<app>_<JWT>`
   * tokens (also per request with `X-GitHub-Stateless-S2S-Token: enabled`); `ttlMs` shortens
   * their one-hour lifetime (compressed-time runs).
   */
  tokens?: { format?: "classic" | "stateless"; ttlMs?: number };
}

export interface HubEnv {
  GITHUB_API_URL: string;
  APP_ID: string;
  PRIVATE_KEY_PATH: string;
  /** PEM. A secret: never log it. */
  PRIVATE_KEY: string;
  WEBHOOK_SECRET: string;
  SANDBOX_ORG: string;
  SANDBOX_REPO: string;
  /** The app's OAuth client, for the console's sign-in. The secret is a secret: never log it. */
  GITHUB_CLIENT_ID: string;
  GITHUB_CLIENT_SECRET: string;
}

export interface HubHandle {
  /** e.g. http://127.0.0.1:PORT */
  url: string;
  /** The storage host's origin (another port, so another origin): where log redirects point. */
  blobUrl: string;
  hub: Hub;
  /** The hub's full state, for core tests and tools (domain modules use `hub`). */
  state: SandboxHub;
  control: Control;
  domains: Domains;
  env: HubEnv;
  close(): Promise<void>;
}

let processKey: { publicKey: KeyObject; pem: string } | undefined;

/**
 * The app's key pair, one per process: generating it is most of a hub's start, and a test process
 * starts many hubs. Hubs apart still refuse each other's JWTs: a JWT is checked against the key of
 * its issuer, and each hub's app has its own id.
 */
function appKeyPair(): { publicKey: KeyObject; pem: string } {
  if (!processKey) {
    const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    processKey = { publicKey, pem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
  }
  return processKey;
}

export async function createHub(opts: CreateHubOptions = {}): Promise<HubHandle> {
  const { publicKey, pem } = appKeyPair();
  const keyDir = await mkdtemp(join(tmpdir(), "steward-sandbox-"));
  const keyPath = join(keyDir, "app.private-key.pem");
  await writeFile(keyPath, pem, { mode: 0o600 });

  const secret = opts.webhookSecret ?? randomBytes(20).toString("hex");
  const state = new SandboxHub({
    appId: 1000 + Math.floor(Math.random() * 900_000),
    appSlug: "steward-sandbox",
    appName: "Steward (sandbox)",
    publicKey,
    hook: { url: opts.webhookUrl, secret, content_type: opts.contentType ?? "json", insecure_ssl: "0" },
    rateLimit: opts.rateLimit ?? 5000,
    randomSeed: opts.randomSeed ?? 1,
    loginAttempts: opts.loginAttempts ?? { max: 20, windowMs: 60_000 },
    ...(opts.tokens ? { tokens: opts.tokens } : {}),
    ...(opts.now ? { now: opts.now } : {}),
  });
  const routes = new RouteTable();
  installAccountRoutes(state, routes);
  const oauth = installOAuthRoutes(state, routes);
  installManifestRoutes(state, routes, oauth);
  installContentRoutes(state, routes);
  installPullRoutes(state, routes);
  installIssueRoutes(state, routes);
  installRefRoutes(state, routes);
  installReleaseRoutes(state, routes);
  installGraphqlRoutes(state, routes);
  installContentWriteRoutes(state, routes);
  installStatusRoutes(state, routes);
  installIssueCrudRoutes(state, routes);
  installReactionRoutes(state, routes);
  installWebhookRoutes(state, routes);
  const domains = installDomains(state, routes);
  const control = new Control(state);
  installControlRoutes(state, routes, control, domains as Record<string, unknown>);

  const server = await listen(createHubServer(state, routes), opts.port);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.baseUrl = url;
  const blobRoutes = new RouteTable();
  installBlobRoutes(state, blobRoutes);
  const blobServer = await listen(createHubServer(state, blobRoutes), opts.blobPort).catch(async (err: unknown) => {
    await stop(server);
    throw err;
  });
  const blobUrl = `http://127.0.0.1:${(blobServer.address() as AddressInfo).port}`;
  state.blobBaseUrl = blobUrl;

  if ((opts.seed ?? "demo") === "demo") seedDemo(control, opts.app);

  return {
    url,
    blobUrl,
    hub: state,
    state,
    control,
    domains,
    env: {
      GITHUB_API_URL: url,
      APP_ID: String(state.appId),
      PRIVATE_KEY_PATH: keyPath,
      PRIVATE_KEY: pem,
      WEBHOOK_SECRET: secret,
      SANDBOX_ORG: DEMO_ORG,
      SANDBOX_REPO: `${DEMO_ORG}/${DEMO_REPO}`,
      GITHUB_CLIENT_ID: oauth.clientId,
      GITHUB_CLIENT_SECRET: oauth.clientSecret,
    },
    async close() {
      await Promise.race([state.deliverer.settled(), new Promise((r) => setTimeout(r, 2_000))]);
      await Promise.all([server, blobServer].map(stop));
      await rm(keyDir, { recursive: true, force: true });
    },
  };
}

function listen(server: Server, port = 0): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

function stop(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
