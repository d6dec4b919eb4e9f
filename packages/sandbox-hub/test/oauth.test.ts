// The hub's OAuth web flow and user-to-server routes, over real HTTP, with GitHub's shapes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHub, type HubHandle } from "../src/hub.js";

let hub: HubHandle;
const redirect = "http://127.0.0.1:9/console/callback";

beforeAll(async () => {
  hub = await createHub();
});
afterAll(async () => {
  await hub?.close();
});

async function codeFor(login: string, state = "s1"): Promise<string> {
  const q = new URLSearchParams({ client_id: hub.env.GITHUB_CLIENT_ID, redirect_uri: redirect, state, login });
  const res = await fetch(`${hub.url}/login/oauth/authorize?${q}`, { redirect: "manual" });
  expect(res.status).toBe(302);
  const location = new URL(res.headers.get("location")!);
  expect(`${location.origin}${location.pathname}`).toBe(redirect);
  expect(location.searchParams.get("state")).toBe(state);
  return location.searchParams.get("code")!;
}

async function exchange(body: Record<string, string>): Promise<Record<string, string>> {
  const res = await fetch(`${hub.url}/login/oauth/access_token`, {
    method: "POST",
    headers: { accept: "application/json", "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, string>;
}

async function tokenFor(login: string): Promise<string> {
  const answer = await exchange({
    client_id: hub.env.GITHUB_CLIENT_ID,
    client_secret: hub.env.GITHUB_CLIENT_SECRET,
    code: await codeFor(login),
    redirect_uri: redirect,
  });
  expect(answer).toMatchObject({ token_type: "bearer", access_token: expect.stringMatching(/^ghu_/) });
  return answer.access_token!;
}

const get = (token: string, path: string) =>
  fetch(`${hub.url}${path}`, { headers: { authorization: `Bearer ${token}`, accept: "application/vnd.github+json" } });

describe("sandbox OAuth", () => {
  it("the authorize page offers the sandbox users, and refuses an unknown client", async () => {
    const page = await fetch(
      `${hub.url}/login/oauth/authorize?client_id=${hub.env.GITHUB_CLIENT_ID}&redirect_uri=${encodeURIComponent(redirect)}`,
    );
    expect(page.headers.get("content-type")).toContain("text/html");
    const text = await page.text();
    for (const login of ["octo-admin", "release-manager", "dev-dana", "contributor"])
      expect(text).toContain(`Sign in as ${login}`);
    expect((await fetch(`${hub.url}/login/oauth/authorize?client_id=Iv1.nope`)).status).toBe(404);
  });

  it("a code works once, for the right client secret and redirect URI only", async () => {
    const code = await codeFor("dev-dana");
    expect(await exchange({ client_id: hub.env.GITHUB_CLIENT_ID, client_secret: "wrong", code })).toMatchObject({
      error: "incorrect_client_credentials",
    });
    const other = await codeFor("dev-dana");
    expect(
      await exchange({
        client_id: hub.env.GITHUB_CLIENT_ID,
        client_secret: hub.env.GITHUB_CLIENT_SECRET,
        code: other,
        redirect_uri: "http://127.0.0.1:9/elsewhere",
      }),
    ).toMatchObject({ error: "redirect_uri_mismatch" });
    const ok = await exchange({
      client_id: hub.env.GITHUB_CLIENT_ID,
      client_secret: hub.env.GITHUB_CLIENT_SECRET,
      code,
    });
    expect(ok.access_token).toMatch(/^ghu_/);
    expect(
      await exchange({ client_id: hub.env.GITHUB_CLIENT_ID, client_secret: hub.env.GITHUB_CLIENT_SECRET, code }),
    ).toMatchObject({ error: "bad_verification_code" });
  });

  it("the user's token lists their installations, the repositories they reach, and their membership role", async () => {
    const dana = await tokenFor("dev-dana");
    const admin = await tokenFor("octo-admin");
    expect(await (await get(dana, "/user")).json()).toMatchObject({ login: "dev-dana" });
    const installations = (await (await get(dana, "/user/installations")).json()) as {
      total_count: number;
      installations: { id: number; app_id: number; account: { login: string } }[];
    };
    expect(installations.total_count).toBe(1);
    expect(installations.installations[0]).toMatchObject({
      app_id: Number(hub.env.APP_ID),
      account: { login: "acme" },
    });
    const id = installations.installations[0]!.id;
    const names = async (token: string) =>
      (
        (await (await get(token, `/user/installations/${id}/repositories`)).json()) as {
          repositories: { full_name: string }[];
        }
      ).repositories
        .map((r) => r.full_name)
        .sort();
    expect(await names(dana)).toEqual(["acme/.github", "acme/api", "acme/web"]);
    expect(await names(admin)).toEqual(["acme/.github", "acme/api", "acme/service-billing", "acme/web"]);
    expect((await get(dana, "/repos/acme/service-billing")).status).toBe(404);
    expect(await (await get(admin, "/user/memberships/orgs/acme")).json()).toMatchObject({
      state: "active",
      role: "admin",
      organization: { login: "acme" },
      user: { login: "octo-admin" },
    });
    expect(await (await get(dana, "/user/memberships/orgs/acme")).json()).toMatchObject({ role: "member" });
    const outsider = await tokenFor("contributor");
    expect((await get(outsider, "/user/memberships/orgs/acme")).status).toBe(404);
    expect(await (await get(outsider, "/user/installations")).json()).toMatchObject({
      total_count: 0,
      installations: [],
    });
  });
});
