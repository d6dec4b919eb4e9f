import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { relative, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Engine } from "../../src/engine/index.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite.js";
import { loadHandlerModules, policyModules } from "../../src/dispatch/load-handlers.js";
import { builtinHandlers, policyHandlers } from "../../handlers/index.js";
import { deliveryOf, examplePayload, privateKey, silent, tempDir, testConfig, testEngine } from "./helpers.js";

const fixture = (name: string) => relative(process.cwd(), join(import.meta.dirname, "fixtures", name));

type Seen = { method: string; url: string; authorization: string | undefined; body: any };

/** A tiny stand-in for the REST API: issues installation tokens and accepts issue comments. */
async function fakeApi(): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const read = async (req: IncomingMessage) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    return text ? JSON.parse(text) : undefined;
  };
  const server = createServer(async (req, res) => {
    const body = await read(req);
    seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
    res.setHeader("content-type", "application/json; charset=utf-8");
    res.setHeader("x-github-media-type", "github.v3; format=json");
    const tokenRoute = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(req.url!);
    if (req.method === "POST" && tokenRoute) {
      res.statusCode = 201;
      res.end(JSON.stringify({ token: "ghs_installationtoken000001", expires_at: new Date(Date.now() + 3_600_000).toISOString(), permissions: { issues: "write" }, repository_selection: "all" }));
      return;
    }
    const comment = /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/.exec(req.url!);
    if (req.method === "POST" && comment) {
      res.statusCode = 201;
      res.end(JSON.stringify({ id: 1, body: body.body, html_url: `https://example.test/${comment[1]}/${comment[2]}/issues/${comment[3]}#c1` }));
      return;
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ message: "Not Found", documentation_url: "https://docs.github.com/rest" }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

let dir: string;
let cleanup: () => Promise<void>;
let store: SqliteStore;
let engine: Engine | undefined;
let api: Awaited<ReturnType<typeof fakeApi>>;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  store = openSqliteStore(dir);
  api = await fakeApi();
});
afterEach(async () => {
  await engine?.stop(1000);
  engine = undefined;
  store.close();
  await new Promise((r) => api.server.close(r));
  await cleanup();
});

describe("loading handler modules", () => {
  it("runs a plain Probot app through a real Probot instance with a working context.octokit", async () => {
    const config = testConfig({ apiUrl: api.url, privateKey: privateKey(), maxAttempts: 1 });
    const handlers = await loadHandlerModules([fixture("probot-app.ts"), fixture("handler-module.ts")], { config, logger: silent });
    expect(handlers.map((h) => [h.name, h.events])).toEqual([
      ["probot-app", ["*"]],
      ["extra", ["ping"]],
    ]);
    engine = testEngine(store, handlers, { config });
    await engine.start();

    const issue: Record<string, any> = { ...examplePayload("issues", "opened"), installation: { id: 31 } };
    const opened = deliveryOf("issues", issue);
    const push = deliveryOf("push", examplePayload("push"));
    const ping = deliveryOf("ping", examplePayload("ping"));
    for (const d of [opened, push, ping]) await engine.intake.record(d);
    await engine.idle();

    const tokenRequest = api.seen.find((s) => s.url === "/app/installations/31/access_tokens");
    expect(tokenRequest?.authorization).toMatch(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/i); // the app's JWT, signed with the real key
    const commentRequest = api.seen.find((s) => s.url.endsWith("/comments"));
    expect(commentRequest?.url).toBe(`/repos/${issue.repository.owner.login}/${issue.repository.name}/issues/${issue.issue.number}/comments`);
    expect(commentRequest?.authorization).toBe("token ghs_installationtoken000001");
    expect(commentRequest?.body).toEqual({ body: `Thanks for opening #${issue.issue.number}` });

    expect((await store.deliveries.getDelivery(opened.id))?.outcomes).toMatchObject([{ handler: "probot-app", status: "done" }]);
    const failedPush = (await store.deliveries.getDelivery(push.id))!;
    expect(failedPush.delivery.status).toBe("dead");
    expect(failedPush.outcomes).toMatchObject([{ handler: "probot-app", status: "failed", detail: "this app cannot handle pushes" }]);
    const pinged = (await store.deliveries.getDelivery(ping.id))!;
    expect(pinged.outcomes.map((o) => [o.handler, o.status])).toEqual([
      ["extra", "done"],
      ["probot-app", "skipped"], // the app never subscribed to ping
    ]);
  });

  it("names the path when a module is missing or has no usable export", async () => {
    const opts = { config: testConfig(), logger: silent };
    await expect(loadHandlerModules(["./no/such/handler.ts"], opts)).rejects.toThrow(/handler module \.\/no\/such\/handler\.ts: no such file/);
    await expect(loadHandlerModules([fixture("not-a-handler.ts")], opts)).rejects.toThrow(
      new RegExp(`handler module ${fixture("not-a-handler.ts")}: its default export is neither`),
    );
    expect(await loadHandlerModules([" ", ""], opts)).toEqual([]);
  });
});

describe("the policy modules of STEWARD_HANDLERS (steward validate, the steward/config check)", () => {
  const counter = globalThis as { stewardAppStarts?: number };

  it("are the modules that declare policy, the very objects the service loads, and no Probot app is started", async () => {
    const paths = [fixture("counting-probot-app.ts"), fixture("policy-module.ts"), fixture("handler-module.ts")];
    const before = counter.stewardAppStarts ?? 0;
    const modules = await policyModules(paths);
    expect(modules.map((m) => m.policy?.key)).toEqual(["extra"]);
    expect(counter.stewardAppStarts ?? 0).toBe(before);

    const service = await loadHandlerModules(paths, { config: testConfig(), logger: silent });
    expect(service.map((h) => h.name)).toEqual(["counting-probot-app", "extra-policy", "extra"]);
    expect(counter.stewardAppStarts).toBe(before + 1);
    expect(service[1]).toBe(modules[0]);
    // Loaded once per list: the check asks on every pull request.
    expect(await policyModules([` ${paths[0]}`, paths[1]!, paths[2]!])).toBe(modules);
  });

  it("come after the built-in modules in Steward's policy set", async () => {
    const set = await policyHandlers([fixture("policy-module.ts")]);
    expect(set.slice(0, builtinHandlers.length)).toEqual(builtinHandlers);
    expect(set.slice(builtinHandlers.length).map((m) => m.name)).toEqual(["extra-policy"]);
    expect(await policyHandlers()).toEqual(builtinHandlers);
  });

  it("name the path of a missing module, as the service does, and are tried again next time", async () => {
    await expect(policyModules(["./no/such/policy-module.ts"])).rejects.toThrow(/handler module \.\/no\/such\/policy-module\.ts: no such file/);
    await expect(policyModules(["./no/such/policy-module.ts"])).rejects.toThrow(/no such file/);
    expect(await policyModules([" ", ""])).toEqual([]);
  });
});
