// Shared set-up of the hub domain tests: a hub with a signed-webhook receiver, an Octokit
// for the demo installation, user Octokits (e.g. a required reviewer), and waiting helpers.
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import { createHmac, createSign, randomBytes, timingSafeEqual } from "node:crypto";
import type { HubHandle } from "../src/hub.js";
import { installationToken, startHub, startReceiver, tokenOctokit } from "./core-helpers.js";

export interface Delivery {
  event: string;
  action: string | undefined;
  payload: Record<string, any>;
  signatureValid: boolean;
}

export async function startWorld() {
  const secret = randomBytes(16).toString("hex");
  const receiver = await startReceiver();
  const hub = await startHub({ webhookUrl: receiver.url, webhookSecret: secret });
  const installationId = hub.control.installation("acme")!.id;
  const token = await installationToken(hub, installationId);
  const octokit = tokenOctokit(hub, token);

  const verify = (body: string, header: unknown) => {
    const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(body).digest("hex")}`);
    const got = Buffer.from(String(header ?? ""));
    return got.length === expected.length && timingSafeEqual(got, expected);
  };

  return {
    hub,
    installationId,
    octokit,
    token,
    /** Octokit for a user (personal token from control). */
    userOctokit: (login: string) => tokenOctokit(hub, hub.control.userToken(login)),
    /**
     * A new installation Octokit after the sandbox clock moved (tokens last an hour on that
     * clock): the app JWT is signed for the hub's "now", as a client with that clock would.
     */
    async freshOctokit() {
      const nowS = Math.floor(hub.control.now().getTime() / 1000);
      const jwt = signJwt(hub.env.PRIVATE_KEY, { iss: Number(hub.env.APP_ID), iat: nowS - 30, exp: nowS + 540 });
      const app = tokenOctokit(hub, jwt);
      const { data } = await app.request("POST /app/installations/{installation_id}/access_tokens", {
        installation_id: installationId,
      });
      return tokenOctokit(hub, data.token);
    },
    /** Every domain change so far has been delivered and answered. */
    async settle(): Promise<void> {
      await hub.domains.idle();
      await hub.control.settled();
    },
    /** Deliveries the receiver got, parsed, optionally of one event (and action). */
    deliveries(event?: string, action?: string): Delivery[] {
      return receiver.received
        .map((r) => {
          const payload = JSON.parse(r.body) as Record<string, any>;
          return {
            event: String(r.headers["x-github-event"]),
            action: payload.action as string | undefined,
            payload,
            signatureValid: verify(r.body, r.headers["x-hub-signature-256"]),
          };
        })
        .filter((d) => (event === undefined || d.event === event) && (action === undefined || d.action === action));
    },
    async close(): Promise<void> {
      await hub.close();
      await receiver.close();
    },
  };
}

export type World = Awaited<ReturnType<typeof startWorld>>;

/** Status and message of a request that may fail. */
export async function outcome(p: Promise<unknown>): Promise<{ status: number; message: string; data: any }> {
  try {
    const res = (await p) as { status: number; data: unknown };
    return { status: res.status, message: "", data: res.data };
  } catch (err) {
    const e = err as { status: number; response?: { data?: { message?: string } } };
    return { status: e.status, message: e.response?.data?.message ?? "", data: e.response?.data };
  }
}

/** What the hub answers a create request (`route` in acme/web) sent with no fields: GitHub names the missing one. */
export async function createWithNothing(w: World, route: string): Promise<{ status: number; errors: unknown }> {
  const res = await outcome(w.octokit.request(route, { owner: "acme", repo: "web" } as never));
  return { status: res.status, errors: res.data?.errors };
}

export type { HubHandle };

function signJwt(privateKey: string, claims: Record<string, unknown>): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const head = `${enc({ alg: "RS256", typ: "JWT" })}.${enc(claims)}`;
  return `${head}.${createSign("RSA-SHA256").update(head).sign(privateKey).toString("base64url")}`;
}

/** A fresh world for each test of the calling file (started before, closed after). */
export function worldPerTest(): () => World {
  return heldWorld(beforeEach, afterEach);
}

/**
 * One world for all the tests of the calling file (or `describe`), which build on each other's
 * state; `prepare` sets it up once it has started.
 */
export function worldPerFile(prepare?: (w: World) => unknown): () => World {
  return heldWorld(beforeAll, afterAll, prepare);
}

function heldWorld(start: typeof beforeAll, stop: typeof afterAll, prepare?: (w: World) => unknown): () => World {
  let w: World | undefined;
  start(async () => {
    w = await startWorld();
    await prepare?.(w);
  });
  stop(async () => {
    await w?.close();
    w = undefined;
  });
  return () => w!;
}
