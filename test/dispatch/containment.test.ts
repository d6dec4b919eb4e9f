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
import { loadHandlerModules } from "../../src/dispatch/load-handlers.js";
import { startSandboxStack } from "../../src/sandbox/stack.js";
import { STEWARD_APP } from "../../src/sandbox/hub.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
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
async function startService(name: string, handlers: string[]) {
  const hub = await scope.hub({ app: GRANT });
  const dir = await scope.dataDir(name);
  const secret = hub.env.WEBHOOK_SECRET;
  const run = scope.stopAfter(
    startChild({ ...(await realAppEnv(hub, dir, secret)), STEWARD_HANDLERS: handlers.join(","), LOG_LEVEL: "info", STEWARD_SHUTDOWN_TIMEOUT: "5s" }),
    (r) => r.proc.exitCode === null && r.proc.kill("SIGKILL"),
  );
  const url = await run.listening;
  hub.control.setWebhookUrl(`${url}/api/github/webhooks`);
  return { hub, dir, secret, run, url };
}

/** A pull request changing the policy file, which the built-in checks handler answers with its check run. */
let prs = 0;
async function builtinsAct(s: Awaited<ReturnType<typeof startService>>) {
  const created = () => s.hub.control.requests().filter((r) => r.method === "POST" && r.path === "/repos/acme/web/check-runs" && r.status === 201).length;
  const before = created();
  s.hub.control.openPullRequest({ owner: "acme", repo: "web", head: `feature/contained-${++prs}`, title: "Contained", files: { ".github/steward.yml": `# change ${prs}\n{}\n` } });
  await vi.waitFor(() => expect(created()).toBeGreaterThan(before), { timeout: 45_000, interval: 50 });
}

async function serving(url: string) {
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  expect((await fetch(`${url}/readyz`)).status).toBe(200);
}

describe("hosted code is contained (steward start)", () => {
  it("probot-stale@1.1.0 from npm: the service starts and stays up, one error line names the app, the built-in handlers act", async () => {
    const s = await startService("stale", [STALE]);
    await vi.waitFor(() => expect(lines(s.run.out()).some((l) => l.component === "containment")).toBe(true), { timeout: 30_000, interval: 50 });
    await builtinsAct(s);
    await serving(s.url);
    expect(s.run.proc.exitCode).toBe(null);

    // One line for the scheduler's rejection (the app's own listeners fail their runs on the
    // pull request, which has no stale.yml: those are its outcomes, not escapes).
    const errors = lines(s.run.out()).filter((l) => l.component === "containment");
    expect(errors).toHaveLength(1);
    expect(errors[0]!.level).toBe(50);
    expect(s.run.out().match(/getInstallations/g)).toHaveLength(1);
    expect(errors[0]).toMatchObject({ handler: "probot-stale", during: "loading", error: "TypeError: github.apps.getInstallations is not a function" });
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
    const attributed = () => lines(s.run.out()).filter((l) => l.component === "containment");
    await vi.waitFor(() => expect(attributed().filter((l) => l.delivery === guid)).toHaveLength(3), { timeout: 45_000, interval: 50 });
    const forDelivery = attributed().filter((l) => l.delivery === guid);
    const ofApp = forDelivery.filter((l) => l.handler === app);
    expect(ofApp).toHaveLength(1);
    expect(ofApp[0]!.msg).toContain(`hosted module ${app}: unhandled rejection outside its awaited work (delivery ${guid})`);
    expect(ofApp[0]!.error).toMatch(/Not Found/);
    const stray = forDelivery.filter((l) => l.handler === "stray-timers");
    expect(stray.map((l) => l.error).sort()).toEqual([`stray emitter error for ${guid}`, `stray timer thrown for ${guid}`]);
    expect(stray.every((l) => l.msg.includes("uncaught exception") && l.msg.includes("after its run ended"))).toBe(true);
    // start()'s stray timer, attributed to its starting.
    expect(attributed().filter((l) => l.during === "starting").map((l) => [l.handler, l.error])).toEqual([["stray-timers", "stray timer thrown after start"]]);

    // The service keeps serving; the built-in handlers act on the next deliveries; a second issue reaches the app again.
    await serving(s.url);
    await builtinsAct(s);
    s.hub.control.openIssue({ owner: "acme", repo: "web", title: "Second" });
    await vi.waitFor(() => expect(attributed().filter((l) => l.handler === app)).toHaveLength(2), { timeout: 45_000, interval: 50 });
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
      expect(outcome.detail).toMatch(/^unawaited-probot-app: unhandled rejection: .*Not Found.*, outside its awaited run/);
      expect(record!.outcomes.find((o) => o.handler === "stray-timers")).toMatchObject({ status: "done" });
    } finally {
      store.close();
    }
  }, 180_000);
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
    const standIn: HandlerModule<any> = { name: "collect-probot-app", events: ["issues.opened"], handle: (ctx) => app!.handle(ctx) };
    const module: HandlerModule<any> = {
      name: "collect-module",
      events: ["issues.opened"],
      async handle(ctx) {
        await ctx.octokit.request(`GET ${collect}/module-absolute`);
        await ctx.octokit.request("GET /module-base-url", { baseUrl: collect });
        await ctx.octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" });
      },
    };
    const stack = scope.stopAfter(await startSandboxStack({ handlers: [standIn, module], hub: { app: GRANT } }), (s) => s.close());
    [app] = await loadHandlerModules([relative(process.cwd(), fixture("collect-probot-app.cjs"))], { config: stack.config, logger: pino({ level: "silent" }) });

    const issue = stack.hub.control.openIssue({ owner: "acme", repo: "web", title: "Collect" });
    const [opened] = await stack.hub.control.waitForDeliveries((d) => d.event === "issues", { timeoutMs: 30_000 });
    expect(await outcomeOf(stack, opened!.guid, "collect-probot-app")).toMatchObject({ status: "done" });
    expect(await outcomeOf(stack, opened!.guid, "collect-module")).toMatchObject({ status: "done" });

    expect(seen.map((s) => s.path).sort()).toEqual(["/module-absolute", "/module-base-url", "/probot-absolute", "/probot-base-url"]);
    expect(seen.filter((s) => s.headers.authorization !== undefined).map((s) => `${s.path}: ${s.headers.authorization}`)).toEqual([]);
    // The same clients' API requests were authenticated (the hub answers 200 only to a token).
    const api = stack.hub.control.requests();
    expect(api.some((r) => r.method === "GET" && r.path === `/repos/acme/web/issues/${issue.number}` && r.status === 200)).toBe(true);
    expect(api.some((r) => r.method === "GET" && r.path === "/repos/acme/web" && r.status === 200)).toBe(true);
  }, 90_000);
});
