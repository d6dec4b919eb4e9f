import { createSign, generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HubHandle } from "../src/hub.js";
import { installationToken, probotFor, startHub, tokenOctokit } from "./core-helpers.js";

function signJwt(privateKey: string | import("node:crypto").KeyObject, claims: Record<string, unknown>): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const head = `${enc({ alg: "RS256", typ: "JWT" })}.${enc(claims)}`;
  const signer = createSign("RSA-SHA256");
  signer.update(head);
  return `${head}.${signer.sign(privateKey).toString("base64url")}`;
}

async function statusOf(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
    return { status: 200, message: "" };
  } catch (err) {
    const e = err as { status: number; response?: { data?: { message?: string } } };
    return { status: e.status, message: e.response?.data?.message ?? "" };
  }
}

describe("hub auth", () => {
  let hub: HubHandle;
  let instId: number;
  beforeAll(async () => {
    hub = await startHub();
    instId = hub.control.installation("acme")!.id;
    hub.control.createOrg("globex");
    hub.control.createRepo({ owner: "globex", name: "secret-plans", private: true });
    hub.control.createRepo({ owner: "globex", name: "public-site" });
    hub.control.install("globex", { permissions: { contents: "read" } });
  });
  afterAll(() => hub.close());

  it("accepts an app JWT signed with the app's key and answers GET /app", async () => {
    const app = await probotFor(hub).auth();
    const { data, headers } = await app.request("GET /app");
    expect(data?.id).toBe(Number(hub.env.APP_ID));
    expect(data?.installations_count).toBe(2);
    expect(headers["x-ratelimit-limit"]).toBe("5000");
  });

  it("answers 401 Bad credentials for an expired JWT and for one signed with another key", async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = signJwt(hub.env.PRIVATE_KEY, { iss: Number(hub.env.APP_ID), iat: now - 1200, exp: now - 600 });
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
    const wrong = signJwt(other, { iss: Number(hub.env.APP_ID), iat: now - 30, exp: now + 500 });
    const tooLong = signJwt(hub.env.PRIVATE_KEY, { iss: Number(hub.env.APP_ID), iat: now - 30, exp: now + 3600 });
    for (const jwt of [expired, wrong, tooLong]) {
      const res = await fetch(`${hub.url}/app`, { headers: { Authorization: `Bearer ${jwt}`, "User-Agent": "t" } });
      expect(res.status).toBe(401);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body.message).toBe("Bad credentials");
      expect(body.documentation_url).toMatch(/^https:\/\//);
    }
    const good = signJwt(hub.env.PRIVATE_KEY, { iss: Number(hub.env.APP_ID), iat: now - 30, exp: now + 540 });
    expect((await fetch(`${hub.url}/app`, { headers: { Authorization: `Bearer ${good}` } })).status).toBe(200);
  });

  it("issues installation tokens valid one hour that reach only the installation's repositories (others 404)", async () => {
    const app = await probotFor(hub).auth();
    const { data } = await app.request("POST /app/installations/{installation_id}/access_tokens", {
      installation_id: instId,
    });
    const ttl = Date.parse(data.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(59 * 60 * 1000);
    expect(ttl).toBeLessThanOrEqual(60 * 60 * 1000);
    expect(data.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const octokit = tokenOctokit(hub, data.token);
    expect((await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "api" })).data.private).toBe(
      true,
    );
    expect(
      await statusOf(octokit.request("GET /repos/{owner}/{repo}", { owner: "globex", repo: "secret-plans" })),
    ).toEqual({ status: 404, message: "Not Found" });
    expect(
      (await statusOf(octokit.request("GET /repos/{owner}/{repo}", { owner: "globex", repo: "public-site" }))).status,
    ).toBe(404);
    // App JWTs are not installation credentials.
    const { token: jwt } = (await app.auth({ type: "app" })) as { token: string };
    expect((await statusOf(tokenOctokit(hub, jwt).request("GET /installation/repositories"))).status).toBe(403);
  });

  it("narrows a token to named repositories and permissions", async () => {
    const token = await installationToken(hub, instId, { repositories: ["web"], permissions: { contents: "read" } });
    const octokit = tokenOctokit(hub, token);
    const { data } = await octokit.request("GET /installation/repositories");
    expect(data.repositories.map((r: { name: string }) => r.name)).toEqual(["web"]);
    expect((await statusOf(octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "api" }))).status).toBe(
      404,
    );
    const asked = await statusOf(
      installationToken(hub, hub.control.installation("globex")!.id, { permissions: { checks: "write" } }),
    );
    expect(asked.status).toBe(422);
  });

  it("expires installation tokens after an hour on the sandbox clock", async () => {
    const token = await installationToken(hub, instId);
    const octokit = tokenOctokit(hub, token);
    expect((await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })).status).toBe(200);
    hub.control.advanceClock(61 * 60 * 1000);
    try {
      expect(await statusOf(octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" }))).toEqual({
        status: 401,
        message: "Bad credentials",
      });
    } finally {
      hub.control.advanceClock(-61 * 60 * 1000);
    }
  });

  it("refuses a suspended installation and lets it back after unsuspend (JWT operations)", async () => {
    const token = await installationToken(hub, instId);
    const app = await probotFor(hub).auth();
    await app.request("PUT /app/installations/{installation_id}/suspended", { installation_id: instId });
    expect(
      (await app.request("GET /app/installations/{installation_id}", { installation_id: instId })).data.suspended_at,
    ).toMatch(/Z$/);
    expect((await statusOf(installationToken(hub, instId))).status).toBe(403);
    expect(
      (await statusOf(tokenOctokit(hub, token).request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })))
        .status,
    ).toBe(403);
    await app.request("DELETE /app/installations/{installation_id}/suspended", { installation_id: instId });
    expect(
      (await tokenOctokit(hub, token).request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })).status,
    ).toBe(200);
  });

  it("looks installations up by organisation and repository with a JWT", async () => {
    const app = await probotFor(hub).auth();
    expect((await app.request("GET /orgs/{org}/installation", { org: "acme" })).data.id).toBe(instId);
    expect((await app.request("GET /repos/{owner}/{repo}/installation", { owner: "acme", repo: "web" })).data.id).toBe(
      instId,
    );
    expect((await statusOf(app.request("GET /orgs/{org}/installation", { org: "nobody" }))).status).toBe(404);
    const list = await app.request("GET /app/installations");
    expect(list.data.map((i) => i.account?.login).sort()).toEqual(["acme", "globex"]);
  });

  it("gives user tokens the reach of the user's organisations", async () => {
    const token = hub.control.userToken("release-manager");
    const octokit = tokenOctokit(hub, token);
    expect((await octokit.request("GET /user")).data.login).toBe("release-manager");
    expect((await octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "api" })).status).toBe(200);
    expect(
      (await statusOf(octokit.request("GET /repos/{owner}/{repo}", { owner: "globex", repo: "secret-plans" }))).status,
    ).toBe(404);
  });

  it("locks a source out after repeated bad credentials, even for valid ones", async () => {
    const locked = await startHub({ seed: "empty", loginAttempts: { max: 3, windowMs: 60_000 } });
    try {
      const app = await probotFor(locked).auth();
      expect((await app.request("GET /app")).status).toBe(200);
      for (let i = 0; i < 3; i++) {
        expect((await statusOf(tokenOctokit(locked, `ghs_wrong${i}`).request("GET /app/installations"))).status).toBe(
          401,
        );
      }
      const after = await statusOf(app.request("GET /app"));
      expect(after).toEqual({
        status: 403,
        message: "Maximum number of login attempts exceeded. Please try again later.",
      });
      locked.control.advanceClock(61_000);
      expect(
        (
          await probotFor(locked)
            .auth()
            .then((a) => a.request("GET /app"))
        ).status,
      ).toBe(200);
    } finally {
      await locked.close();
    }
  });
});
