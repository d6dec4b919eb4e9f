// Hosted code is contained. `steward start` (a child process: what escapes a module reaches the
// process's own listeners, as in production) hosts the published probot-stale@1.1.0, whose
// probot-scheduler calls an Octokit 15 method at load without awaiting it; a Probot app that
// leaves a failing request unawaited; and a handler module whose timers and emitters throw after
// its run. Each is attributed by name, the delivery's record says failed where the error belongs
// to its run, and the service and the built-in handlers go on. In-process: a hosted app's (and a
// handler module's) requests to another origin carry no credentials.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { join, relative, resolve } from "node:path";
import { describe, expect, it, vi } from "vitest";
import pino from "pino";
import type { HandlerModule } from "../../src/handler.js";
import { loadHandlerModules } from "../../src/modules/load.js";
import { startSandboxStack } from "../../src/sandbox/stack.js";
import { STEWARD_APP } from "../../src/sandbox/hub.js";
import { openSqliteStore } from "../../src/store/sqlite/store.js";
import { outcomeOf } from "../../src/testing.js";
import { realAppEnv, startChild } from "../service/child.js";
import { perTest } from "../service/per-test.js";

const fixture = (name: string) => resolve(import.meta.dirname, "fixtures", name);
const STALE = resolve(import.meta.dirname, "../../node_modules/probot-stale/index.js");
/** Steward's grant, plus `issues` deliveries (the fixtures listen to issues.opened). */
const GRANT = { permissions: STEWARD_APP.permissions, events: [...STEWARD_APP.events, "issues"] };

const scope = perTest();

interface LogLine {
  level: number;
  msg: string;
  handler?: string;
  component?: string;
  delivery?: string;
  during?: string;
  error?: string;
}

function lines(out: string): LogLine[] {
  return out
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as LogLine);
}

/** `steward start` as the hub's app, hosting `handlers`; the hub delivers to it. */
async function startService(name: string, handlers: string[], env: Record<string, string> = {}) {
  const hub = await scope.hub({ app: GRANT });
  const dir = await scope.dataDir(name);
  const secret = hub.env.WEBHOOK_SECRET;
  const run = scope.stopAfter(
    startChild({
      ...(await realAppEnv(hub, dir, secret)),
      STEWARD_HANDLERS: handlers.join(","),
      LOG_LEVEL: "info",
      STEWARD_SHUTDOWN_TIMEOUT: "5s",
      ...env,
    }),
    (r) => r.proc.exitCode === null && r.proc.kill("SIGKILL"),
  );
  const url = await run.listening;
  hub.control.setWebhookUrl(`${url}/api/github/webhooks`);
  return { hub, dir, secret, run, url };
}

/** A pull request changing the policy file, which the built-in checks handler answers with its check run. */
let prs = 0;
async function builtinsAct(s: Awaited<ReturnType<typeof startService>>) {
  const created = () =>
    s.hub.control
      .requests()
      .filter((r) => r.method === "POST" && r.path === "/repos/acme/web/check-runs" && r.status === 201).length;
  const before = created();
  s.hub.control.openPullRequest({
    owner: "acme",
    repo: "web",
    head: `feature/contained-${++prs}`,
    title: "Contained",
    files: { ".github/steward.yml": `# change ${prs}\n{}\n` },
  });
  await vi.waitFor(() => expect(created()).toBeGreaterThan(before), { timeout: 45_000, interval: 50 });
}

async function serving(url: string) {
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  expect((await fetch(`${url}/readyz`)).status).toBe(200);
}

describe("hosted code is contained (steward start)", () => {
  it("probot-stale@1.1.0 from npm: the service starts and stays up, one error line names the app, the built-in handlers act", async () => {
    // Its Octokit 15 calls would have it refused at load (legacy-octokit.test.ts): with that check
    // off it loads, and what it does at load anyway is what containment must hold.
    const s = await startService("stale", [STALE], { STEWARD_OCTOKIT_CHECK: "off" });
    await vi.waitFor(() => expect(lines(s.run.out()).some((l) => l.component === "containment")).toBe(true), {
      timeout: 30_000,
      interval: 50,
    });
    await builtinsAct(s);
    await serving(s.url);
    expect(s.run.proc.exitCode).toBe(null);

    // One line for the scheduler's rejection (the app's own listeners fail their runs on the
    // pull request, which has no stale.yml: those are its outcomes, not escapes).
    const errors = lines(s.run.out()).filter((l) => l.component === "containment");
    expect(errors).toHaveLength(1);
    expect(errors[0]!.level).toBe(50);
    expect(s.run.out().match(/getInstallations/g)).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      handler: "probot-stale",
      during: "loading",
      error: "TypeError: github.apps.getInstallations is not a function",
    });
    expect(errors[0]!.msg).toContain("hosted module probot-stale: unhandled rejection");
    // The app itself stays loaded: its own events still reach it.
    expect(s.run.out()).toContain('"handler":"probot-stale","msg":"handler module loaded"');

    s.run.proc.kill("SIGTERM");
    expect(await s.run.exited).toBe(0);
  }, 120_000);

  it("an unawaited failing request fails that app's run of the delivery; stray timers and emitters are attributed; everything else goes on", async () => {
    const app = "unawaited-probot-app";
    const s = await startService("unawaited", [fixture(`${app}.cjs`), fixture("stray-timers-handler.mjs")]);
    s.hub.control.openIssue({ owner: "acme", repo: "web", title: "First" });
    const [opened] = await s.hub.control.waitForDeliveries((d) => d.event === "issues", { timeoutMs: 30_000 });
    const guid = opened!.guid;

    // The app's line names it and the delivery; the handler module's timer and emitter, thrown after its run returned, too.
    // (The failed delivery is retried meanwhile: each attempt logs its own lines.)
    const attributed = () => lines(s.run.out()).filter((l) => l.component === "containment");
    const forDelivery = (id: string) => attributed().filter((l) => l.delivery === id);
    await vi.waitFor(
      () => {
        expect(forDelivery(guid).some((l) => l.handler === app)).toBe(true);
        expect(
          new Set(
            forDelivery(guid)
              .filter((l) => l.handler === "stray-timers")
              .map((l) => l.error),
          ),
        ).toEqual(new Set([`stray emitter error for ${guid}`, `stray timer thrown for ${guid}`]));
      },
      { timeout: 45_000, interval: 50 },
    );
    for (const line of forDelivery(guid)) {
      if (line.handler === app) {
        expect(line.msg).toContain(
          `hosted module ${app}: unhandled rejection outside its awaited work (delivery ${guid})`,
        );
        expect(line.error).toMatch(/Not Found/);
      } else {
        expect(line.handler).toBe("stray-timers");
        expect(line.msg).toMatch(
          /hosted module stray-timers: uncaught exception outside its awaited work \(delivery .*, after its run ended\)/,
        );
      }
    }
    // start()'s stray timer, attributed to its starting.
    expect(
      attributed()
        .filter((l) => l.during === "starting")
        .map((l) => [l.handler, l.error]),
    ).toEqual([["stray-timers", "stray timer thrown after start"]]);

    // The service keeps serving; the built-in handlers act on the next deliveries; a second issue reaches the app again.
    await serving(s.url);
    await builtinsAct(s);
    s.hub.control.openIssue({ owner: "acme", repo: "web", title: "Second" });
    const second = (
      await s.hub.control.waitForDeliveries((d) => d.event === "issues", { count: 2, timeoutMs: 30_000 })
    ).find((d) => d.guid !== guid)!.guid;
    await vi.waitFor(() => expect(forDelivery(second).some((l) => l.handler === app)).toBe(true), {
      timeout: 45_000,
      interval: 50,
    });
    await builtinsAct(s);
    expect(s.run.proc.exitCode).toBe(null);

    s.run.proc.kill("SIGTERM");
    expect(await s.run.exited).toBe(0);
    // The delivery's record: the app's run failed (retryable), not done; the handler module's run was done.
    const store = openSqliteStore(join(s.dir, "data"));
    try {
      const record = await store.deliveries.getDelivery(guid);
      const outcome = record!.outcomes.find((o) => o.handler === app)!;
      expect(outcome).toMatchObject({ status: "failed", retryable: true });
      expect(outcome.detail).toMatch(
        /^unawaited-probot-app: unhandled rejection: .*Not Found.*, outside its awaited run/,
      );
      expect(record!.outcomes.find((o) => o.handler === "stray-timers")).toMatchObject({ status: "done" });
    } finally {
      store.close();
    }
  }, 180_000);
});

describe("a module that cannot load is disabled, the service serves", () => {
  // The steward/config check validates the modules the service loads: before, it failed every pull request on the missing one.
  it("logs one line naming each module and why, and the built-in handlers act", async () => {
    const out: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void out.push(line) });
    const broken = [relative(process.cwd(), fixture("throwing-probot-app.cjs")), "./no/such/module.js"];
    const stack = scope.stopAfter(
      await startSandboxStack({ env: { STEWARD_HANDLERS: broken.join(",") }, logger }),
      (s) => s.close(),
    );
    expect((await fetch(`${stack.steward.url}/healthz`)).status).toBe(200);
    const disabled = lines(out.join("")).filter((l) => / disabled: /.test(l.msg));
    expect(disabled.map((l) => [l.level, l.msg, l.error])).toEqual([
      [
        50,
        "handler module throwing-probot-app disabled: it could not be loaded; Steward serves without it",
        "throwing-probot-app needs SOME_SETTING",
      ],
      [
        50,
        "handler module module disabled: it could not be loaded; Steward serves without it",
        expect.stringContaining("handler module ./no/such/module.js: no such file"),
      ],
    ]);
    expect(
      stack.steward.engine
        .handlerStarts()
        .map((h) => h.handler)
        .sort(),
    ).toEqual(["deployments", "secrets"]);
    stack.hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "after-disabled",
      title: "Policy",
      files: { ".github/steward.yml": "{}\n" },
    });
    await vi.waitFor(
      () =>
        expect(
          stack.hub.control
            .requests()
            .some((r) => r.method === "POST" && r.path === "/repos/acme/web/check-runs" && r.status === 201),
        ).toBe(true),
      { timeout: 45_000, interval: 50 },
    );
  }, 90_000);
});

describe("a hosted module's credentials go to the API origin only", () => {
  it("requests to another 127.0.0.1 port carry no Authorization, from a Probot app and from a handler module", async () => {
    const seen: { path: string; headers: IncomingHttpHeaders }[] = [];
    const collector = createServer((req, res) => {
      seen.push({ path: req.url ?? "", headers: req.headers });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
    await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
    scope.stopAfter(collector, (c) => new Promise((r) => c.close(r)));
    const collect = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    process.env.STEWARD_TEST_COLLECT_URL = collect;
    scope.stopAfter(null, () => delete process.env.STEWARD_TEST_COLLECT_URL);

    let app: HandlerModule<any> | undefined;
    const standIn: HandlerModule<any> = {
      name: "collect-probot-app",
      events: ["issues.opened"],
      handle: (ctx) => app!.handle(ctx),
    };
    const module: HandlerModule<any> = {
      name: "collect-module",
      events: ["issues.opened"],
      async handle(ctx) {
        await ctx.octokit.request(`GET ${collect}/module-absolute`);
        await ctx.octokit.request("GET /module-base-url", { baseUrl: collect });
        await ctx.octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
      },
    };
    const stack = scope.stopAfter(await startSandboxStack({ handlers: [standIn, module], hub: { app: GRANT } }), (s) =>
      s.close(),
    );
    [app] = await loadHandlerModules([relative(process.cwd(), fixture("collect-probot-app.cjs"))], {
      config: stack.config,
      logger: pino({ level: "silent" }),
    });

    const issue = stack.hub.control.openIssue({ owner: "acme", repo: "web", title: "Collect" });
    const [opened] = await stack.hub.control.waitForDeliveries((d) => d.event === "issues", { timeoutMs: 30_000 });
    expect(await outcomeOf(stack, opened!.guid, "collect-probot-app")).toMatchObject({ status: "done" });
    expect(await outcomeOf(stack, opened!.guid, "collect-module")).toMatchObject({ status: "done" });

    expect(seen.map((s) => s.path).sort()).toEqual([
      "/module-absolute",
      "/module-base-url",
      "/probot-absolute",
      "/probot-base-url",
    ]);
    expect(
      seen.filter((s) => s.headers.authorization !== undefined).map((s) => `${s.path}: ${s.headers.authorization}`),
    ).toEqual([]);
    // The same clients' API requests were authenticated (the hub answers 200 only to a token).
    const api = stack.hub.control.requests();
    expect(
      api.some((r) => r.method === "GET" && r.path === `/repos/acme/web/issues/${issue.number}` && r.status === 200),
    ).toBe(true);
    expect(api.some((r) => r.method === "GET" && r.path === "/repos/acme/web" && r.status === 200)).toBe(true);
  }, 90_000);
});
