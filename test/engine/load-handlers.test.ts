import { relative, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadHandlerModules, policyModules } from "../../src/modules/load.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { builtinHandlers, policyHandlers } from "../../handlers/index.js";
import { deliveryOf, examplePayload, silent, testConfig, testEngine } from "./helpers.js";
import { sqliteStorePerTest } from "./scratch-store.js";

const fixture = (name: string) => relative(process.cwd(), join(import.meta.dirname, "fixtures", name));

let hub: HubHandle;
beforeEach(async () => {
  hub = await createHub();
});
afterEach(async () => {
  await hub.close();
});
// After the hub's hooks: the engine stops before the hub does.
const scratch = sqliteStorePerTest();

describe("loading handler modules", () => {
  it("runs a plain Probot app through a real Probot instance with a working context.octokit", async () => {
    const config = testConfig({
      apiUrl: hub.url,
      appId: Number(hub.env.APP_ID),
      privateKey: hub.env.PRIVATE_KEY,
      maxAttempts: 1,
    });
    const handlers = await loadHandlerModules([fixture("probot-app.ts"), fixture("handler-module.ts")], {
      config,
      logger: silent,
    });
    expect(handlers.map((h) => [h.name, h.events])).toEqual([
      ["probot-app", ["*"]],
      ["extra", ["ping"]],
    ]);
    const engine = (scratch.engine = testEngine(scratch.store, handlers, { config }));
    await engine.start();

    // A real issue on the hub, named by a real example payload of its opening.
    const installationId = hub.control.installation("acme")!.id;
    const { number } = hub.control.openIssue({ owner: "acme", repo: "web", title: "It breaks" });
    const example = examplePayload("issues", "opened");
    const issue: Record<string, any> = {
      ...example,
      issue: { ...example.issue, number },
      repository: hub.state.repoJson(hub.control.repo("acme", "web")!),
      installation: { id: installationId },
    };
    const opened = deliveryOf("issues", issue);
    const push = deliveryOf("push", examplePayload("push"));
    const ping = deliveryOf("ping", examplePayload("ping"));
    for (const d of [opened, push, ping]) await engine.intake.record(d);
    await engine.idle();

    // The token was asked for with the app's JWT, which the hub verified against the app's key.
    const tokenRequests = hub.control
      .requests()
      .filter((r) => r.path === `/app/installations/${installationId}/access_tokens`);
    expect(tokenRequests.map((r) => [r.method, r.auth, r.authorization, r.status])).toEqual([
      ["POST", "app", true, 201],
    ]);
    expect(hub.state.tokens.minted.get(installationId)).toBe(1);
    // The comment was written with that installation token, on the issue.
    const commentPath = `/repos/acme/web/issues/${number}/comments`;
    expect(
      hub.control
        .requests()
        .filter((r) => r.path.endsWith("/comments"))
        .map((r) => [r.method, r.path, r.auth, r.status]),
    ).toEqual([["POST", commentPath, "installation", 201]]);
    expect(
      hub.control.effects.filter((e) => e.kind === "issues.commented").map((e) => [e.by, e.detail.number]),
    ).toEqual([[`installation:${installationId}`, number]]);
    const reader = await fetch(`${hub.url}${commentPath}`, {
      headers: { authorization: `token ${hub.control.userToken("octo-admin")}` },
    });
    expect(
      ((await reader.json()) as { body: string; user: { login: string } }[]).map((c) => [c.user.login, c.body]),
    ).toEqual([["steward-sandbox[bot]", `Thanks for opening #${number}`]]);

    expect((await scratch.store.deliveries.getDelivery(opened.id))?.outcomes).toMatchObject([
      { handler: "probot-app", status: "done" },
    ]);
    const failedPush = (await scratch.store.deliveries.getDelivery(push.id))!;
    expect(failedPush.delivery.status).toBe("dead");
    expect(failedPush.outcomes).toMatchObject([
      { handler: "probot-app", status: "failed", detail: "this app cannot handle pushes" },
    ]);
    const pinged = (await scratch.store.deliveries.getDelivery(ping.id))!;
    expect(pinged.outcomes.map((o) => [o.handler, o.status])).toEqual([
      ["extra", "done"],
      ["probot-app", "skipped"], // the app never subscribed to ping
    ]);
  });

  it("names the path when a module is missing or has no usable export", async () => {
    const opts = { config: testConfig(), logger: silent };
    await expect(loadHandlerModules(["./no/such/handler.ts"], opts)).rejects.toThrow(
      /handler module \.\/no\/such\/handler\.ts: no such file/,
    );
    await expect(loadHandlerModules([fixture("not-a-handler.ts")], opts)).rejects.toThrow(
      new RegExp(`handler module ${fixture("not-a-handler.ts")}: its default export is neither`),
    );
    await expect(loadHandlerModules([fixture("bad-takes.ts")], opts)).rejects.toThrow(
      new RegExp(`handler module ${fixture("bad-takes.ts")}: \`takes\` must be a function .* not string`),
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
    await expect(policyModules(["./no/such/policy-module.ts"])).rejects.toThrow(
      /handler module \.\/no\/such\/policy-module\.ts: no such file/,
    );
    await expect(policyModules(["./no/such/policy-module.ts"])).rejects.toThrow(/no such file/);
    expect(await policyModules([" ", ""])).toEqual([]);
  });
});
