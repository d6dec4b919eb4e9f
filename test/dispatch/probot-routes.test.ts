// Probot apps' HTTP routes on Steward's own server: `getRouter(path)` and `app.route(path)`
// are served over real HTTP next to the webhook intake, unknown subpaths answer 404, a route
// that throws answers 500 and the process goes on, and a mount over Steward's paths is
// refused at load time.
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { loadHandlerModules } from "../../src/modules/load.js";
import { mountConflict, STEWARD_OWN_PATHS } from "../../src/modules/probot-routes.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";

const fixture = (name: string) => relative(process.cwd(), join(import.meta.dirname, "fixtures", name));

let stack: SandboxStack;
let base: string;
beforeAll(async () => {
  stack = await startSandboxStack({
    env: { STEWARD_HANDLERS: [fixture("router-probot-app.cjs"), fixture("route-probot-app.cjs")].join(",") },
  });
  base = stack.steward.url;
}, 60_000);
afterAll(async () => {
  await stack?.close();
});

describe("Probot apps' routes on Steward's server", () => {
  it("serves getRouter(path) GET and POST routes and getRouter() under /probot/<app>", async () => {
    const hello = await fetch(`${base}/my-app/hello?name=dana`);
    expect(hello.status).toBe(200);
    expect(await hello.text()).toBe("hi dana");

    const echo = await fetch(`${base}/my-app/echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ a: [1, 2] }),
    });
    expect(echo.status).toBe(201);
    expect(await echo.json()).toEqual({ got: { a: [1, 2] } });

    const status = await fetch(`${base}/probot/router-probot-app/status`);
    expect(status.status).toBe(200);
    expect(await status.json()).toEqual({ ok: true });
  });

  it("serves app.route(path) of Probot <= 10 apps", async () => {
    const res = await fetch(`${base}/legacy-app/hello`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("hi from app.route");
  });

  it("answers 404 for unknown subpaths and methods, and Steward's own paths still work", async () => {
    const unknown = await fetch(`${base}/my-app/nope`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { message: string }).message).toMatch(/GET \/my-app\/nope/);
    expect((await fetch(`${base}/my-app/echo`)).status).toBe(404);
    expect((await fetch(`${base}/elsewhere`)).status).toBe(404);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const webhook = await fetch(`${base}${stack.config.webhookPath}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-github-event": "ping", "x-github-delivery": "routes-1" },
      body: "{}",
    });
    expect(webhook.status).toBe(401); // the intake, not an app's router: no signature
  });

  it("answers 500 when a route throws or rejects, and keeps serving", async () => {
    const boom = await fetch(`${base}/my-app/boom`);
    expect(boom.status).toBe(500);
    expect(await boom.text()).not.toMatch(/exploded/);
    expect((await fetch(`${base}/my-app/reject`)).status).toBe(500);
    expect((await fetch(`${base}/my-app/hello`)).status).toBe(200);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it("refuses at load time a mount over Steward's paths, and addHandler, naming the call", async () => {
    const opts = { config: stack.config, logger: pino({ level: "silent" }) };
    await expect(loadHandlerModules([fixture("shadow-probot-app.cjs")], opts)).rejects.toThrow(
      /shadow-probot-app.*called getRouter\(\) to serve routes under "\/console", which would shadow Steward's own \/console/,
    );
    await expect(loadHandlerModules([fixture("add-handler-probot-app.cjs")], opts)).rejects.toThrow(
      /add-handler-probot-app.*called addHandler\(\)/,
    );
  });

  it("decides conflicts by whole path segments", () => {
    const reserved = [...STEWARD_OWN_PATHS, "/api/github/webhooks"];
    expect(mountConflict("/api", reserved)).toBe("/api/github/webhooks");
    expect(mountConflict("/api/github/webhooks/more", reserved)).toBe("/api/github/webhooks");
    expect(mountConflict("/console/x", reserved)).toBe("/console");
    expect(mountConflict("/", reserved)).toMatch(/every path/);
    expect(mountConflict("/consoles", reserved)).toBeUndefined();
    expect(mountConflict("/apis", reserved)).toBeUndefined();
    expect(mountConflict("/probot/app", reserved)).toBeUndefined();
  });
});
