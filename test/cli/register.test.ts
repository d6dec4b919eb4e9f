// `steward register` end to end against the sandbox hub: the page's form posts app.yml as a
// manifest to the hub (driven with plain HTTP, as a browser would), the hub redirects back
// with a code, Steward exchanges it and writes .env; a Steward started from that .env alone
// then takes a signed delivery from the hub and calls the API as the new app.
import { readFileSync, statSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { freePort } from "../lifecycle/support.js";
import pino from "pino";
import { loadDotEnv } from "../../src/cli/dotenv.js";
import { manifestFromAppYml } from "../../src/cli/register/manifest.js";
import { startRegistration } from "../../src/cli/register/flow.js";
import { withoutKeys } from "../../src/cli/register/env-file.js";
import { loadConfig } from "../../src/config/env.js";
import { defineHandler } from "../../src/handler.js";
import { run as runRegister } from "../../src/cli/commands/register.js";
import { perTest } from "../service/per-test.js";
import { browse } from "./registration-page.js";

const appYml = readFileSync(join(import.meta.dirname, "../../app.yml"), "utf8");

const scope = perTest();
const register = async (opts: Parameters<typeof startRegistration>[0]) =>
  scope.stopAfter(await startRegistration(opts), (r) => r.close());

describe("steward register against the sandbox hub", () => {
  it("writes the new app's credentials to .env, keeping its other lines", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("register");
    const envFile = join(dir, ".env");
    await writeFile(
      envFile,
      '# my settings\nFOO=bar\nAPP_ID=1\nPRIVATE_KEY="-----BEGIN OLD-----\nold\n-----END OLD-----"\nLOG_LEVEL=warn\n',
    );
    const stewardPort = await freePort();
    const hookUrl = `http://127.0.0.1:${stewardPort}/api/github/webhooks`;
    const registration = await register({
      manifest: (redirectUrl) => manifestFromAppYml(appYml, { redirectUrl, hookUrl }),
      githubUrl: hub.url,
      apiUrl: hub.url,
      port: 0,
      envFile,
      extraEnv: { GITHUB_API_URL: hub.url },
    });

    const { callback, manifest, action } = await browse(registration);
    expect(action).toMatch(new RegExp(`^${hub.url}/settings/apps/new\\?state=[0-9a-f]{32}$`));
    expect(manifest).toMatchObject({
      name: "Steward",
      url: "https://github.com/steward-app/steward",
      hook_attributes: { url: hookUrl, active: true },
      public: false,
    });
    expect(manifest.redirect_url).toBe(`${registration.url}callback`);
    expect((manifest.default_permissions as Record<string, string>).checks).toBe("write");
    expect(callback.status).toBe(200);
    const app = await registration.done;
    expect(app.id).toBe(Number(hub.env.APP_ID));

    // .env: other lines kept, the old app's lines replaced, owner-only, secrets not on the page.
    const text = await readFile(envFile, "utf8");
    expect(text).toMatch(/^# my settings\nFOO=bar\nLOG_LEVEL=warn\n/);
    expect(text).not.toMatch(/-----BEGIN OLD-----|^APP_ID=1$/m); // not a bare "OLD": it can occur in the new key's base64
    expect(statSync(envFile).mode & 0o777).toBe(0o600);
    const env: NodeJS.ProcessEnv = {};
    loadDotEnv(env, dir);
    expect(Object.keys(env).sort()).toEqual([
      "APP_ID",
      "FOO",
      "GITHUB_API_URL",
      "GITHUB_CLIENT_ID",
      "GITHUB_CLIENT_SECRET",
      "LOG_LEVEL",
      "PRIVATE_KEY",
      "WEBHOOK_SECRET",
    ]);
    expect(env.PRIVATE_KEY).toMatch(/^-----BEGIN RSA PRIVATE KEY-----\n[\s\S]+\n-----END RSA PRIVATE KEY-----\n?$/);
    expect(env.PRIVATE_KEY).not.toBe(hub.env.PRIVATE_KEY); // a new key pair
    expect(env.WEBHOOK_SECRET).not.toBe(hub.env.WEBHOOK_SECRET);
    const shown = await callback.text();
    for (const secret of [env.PRIVATE_KEY!.split("\n")[1]!, env.WEBHOOK_SECRET!, env.GITHUB_CLIENT_SECRET!])
      expect(shown).not.toContain(secret);
    // The code works once.
    const code = new URL(
      (
        await fetch(action, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ manifest: JSON.stringify(manifest) }).toString(),
          redirect: "manual",
        })
      ).headers.get("location")!,
    ).searchParams.get("code")!;
    expect((await fetch(`${hub.url}/app-manifests/${code}/conversions`, { method: "POST" })).status).toBe(201);
    expect((await fetch(`${hub.url}/app-manifests/${code}/conversions`, { method: "POST" })).status).toBe(404);
  });

  it("a Steward configured from the written .env receives the hub's signed delivery and acts as the app", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("register");
    const stewardPort = await freePort();
    const registration = await register({
      manifest: (redirectUrl) =>
        manifestFromAppYml(appYml, { redirectUrl, hookUrl: `http://127.0.0.1:${stewardPort}/api/github/webhooks` }),
      githubUrl: hub.url,
      apiUrl: hub.url,
      port: 0,
      envFile: join(dir, ".env"),
      extraEnv: { GITHUB_API_URL: hub.url },
    });
    await browse(registration);
    await registration.done;

    const env: NodeJS.ProcessEnv = {
      PORT: String(stewardPort),
      HOST: "127.0.0.1",
      STEWARD_DATA_DIR: join(dir, "data"),
    };
    loadDotEnv(env, dir);
    const seen: string[] = [];
    const reader = defineHandler({
      name: "reader",
      events: ["push"],
      async handle(ctx) {
        // An installation token minted with the new key (the app's JWT signed with the written PEM).
        const { data } = await ctx.octokit.rest.repos.get({
          owner: ctx.payload.repository.owner!.login,
          repo: ctx.payload.repository.name,
        });
        seen.push(data.full_name);
        return { status: "done" };
      },
    });
    const steward = await scope.steward({
      config: loadConfig(env),
      handlers: [reader],
      logger: pino({ level: "silent" }),
      api: { writeIntervalMs: 0 },
    });
    hub.control.pushFiles({ owner: "acme", repo: "web", files: { "registered.txt": "hi\n" } });
    await vi.waitFor(() => expect(seen).toContain("acme/web"), { timeout: 60_000, interval: 50 });
    const delivery = hub.control.deliveries().find((d) => d.event === "push")!;
    expect((await steward.store.deliveries.getDelivery(delivery.guid))?.delivery.event).toBe("push");
  }, 90_000);

  it("refuses a callback whose state is not the page's, writing nothing", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("register");
    const registration = await register({
      manifest: (redirectUrl) => manifestFromAppYml(appYml, { redirectUrl }),
      githubUrl: hub.url,
      apiUrl: hub.url,
      port: 0,
      envFile: join(dir, ".env"),
    });
    const res = await fetch(`${registration.url}callback?code=abc&state=forged`);
    expect(res.status).toBe(400);
    await expect(readFile(join(dir, ".env"), "utf8")).rejects.toThrow(/ENOENT/);
  });

  it("the hub refuses a manifest without a redirect_url, and an unknown code", async () => {
    const hub = await scope.hub();
    const res = await fetch(`${hub.url}/settings/apps/new`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ manifest: JSON.stringify({ url: "https://example.com" }) }).toString(),
      redirect: "manual",
    });
    expect(res.status).toBe(422);
    expect(await res.text()).toMatch(/redirect_url is required/);
    expect((await fetch(`${hub.url}/app-manifests/nope/conversions`, { method: "POST" })).status).toBe(404);
  });
});

describe("the steward register command", () => {
  it("registers under an organisation, sends deliveries to WEBHOOK_PROXY_URL, and prints no secret", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("register");
    const port = await freePort();
    let out = "";
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => ((out += String(chunk)), true));
    try {
      const proxy = "http://127.0.0.1:9/channel-key";
      const exit = runRegister(
        [
          "--port",
          String(port),
          "--org",
          "acme",
          "--env-file",
          join(dir, ".env"),
          "--app-yml",
          join(import.meta.dirname, "../../app.yml"),
        ],
        {
          GITHUB_URL: hub.url,
          GITHUB_API_URL: hub.url,
          WEBHOOK_PROXY_URL: proxy,
        },
      );
      await vi.waitFor(() => expect(out).toContain(`Open http://127.0.0.1:${port}/`), {
        timeout: 30_000,
        interval: 20,
      });
      const { manifest, action } = await browse({ url: `http://127.0.0.1:${port}/` });
      expect(action.startsWith(`${hub.url}/organizations/acme/settings/apps/new?state=`)).toBe(true);
      expect((manifest.hook_attributes as { url: string }).url).toBe(proxy);
      expect(await exit).toBe(0);
      expect(out).toMatch(/Registered Steward \(app id \d+, owner acme\)/);
      const env: NodeJS.ProcessEnv = {};
      loadDotEnv(env, dir);
      expect(env.GITHUB_API_URL).toBe(hub.url);
      for (const secret of [env.WEBHOOK_SECRET!, env.GITHUB_CLIENT_SECRET!, env.PRIVATE_KEY!.split("\n")[1]!])
        expect(out).not.toContain(secret);
    } finally {
      spy.mockRestore();
    }
  });
});

describe(".env rewriting", () => {
  it("drops earlier definitions, multi-line quoted ones whole, and keeps everything else", () => {
    const text = 'A=1\nexport PRIVATE_KEY="-----BEGIN\nxyz\n-----END"\nB=2\nAPP_ID=9\n';
    expect(withoutKeys(text, new Set(["PRIVATE_KEY", "APP_ID"]))).toEqual(["A=1", "B=2"]);
  });
});
