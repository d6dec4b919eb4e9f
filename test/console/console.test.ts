// The console over real HTTP against the sandbox stack: sign-in through the hub's OAuth,
// what an owner and a member without access to a repository each see and may do, CSRF,
// sealed cookies, the off state, the schema, and check runs' details links.
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";
import { signIn, Visitor } from "./session.js";
import { leakGuard } from "../support/leak-guard.js";
import { alterOneCharacter } from "../support/tamper.js";

const ORG = "acme";
let world: ConsoleWorld;
let stack: SandboxStack;
let base: string;
const settle = () => world.settle();

async function deliveryIdOf(repo: string, status?: "dead"): Promise<string> {
  const page = await stack.steward.store.browse.browseDeliveries({
    limit: 50,
    repository: `${ORG}/${repo}`,
    event: "push",
    ...(status ? { status } : {}),
  });
  expect(page.items.length).toBeGreaterThan(0);
  return page.items[0]!.id;
}

beforeAll(async () => {
  world = await consoleWorld();
  stack = world.stack;
  base = world.base;
  stack.hub.control.pushFiles({ owner: ORG, repo: "web", files: { "README.md": "# web\n" }, message: "docs" });
  stack.hub.control.pushFiles({
    owner: ORG,
    repo: "service-billing",
    files: { "rates.txt": "1\n" },
    message: "break the rates",
  });
  await settle();
});
afterAll(async () => {
  await stack?.close();
});

describe("console sign-in and sessions", () => {
  it("signs in through the hub's authorize page; the cookie is HttpOnly, SameSite=Lax, expiring and sealed", async () => {
    const v = new Visitor(base);
    const start = await v.request("/console/login");
    expect(start.headers.get("location")).toMatch(new RegExp(`^${stack.hub.url}/login/oauth/authorize\\?client_id=`));
    const owner = await signIn(base, "octo-admin");
    const session = owner.cookies.get("steward_session")!;
    // The token is inside, encrypted: neither it nor the login reads from the cookie.
    expect(Buffer.from(session, "base64url").toString("latin1")).not.toMatch(/octo-admin|gh[up]_/);
    const raw = await fetch(`${stack.hub.url}/login/oauth/authorize?client_id=${stack.hub.env.GITHUB_CLIENT_ID}`).then(
      (r) => r.text(),
    );
    expect(raw).toContain("Sign in as dev-dana");

    const again = new Visitor(base);
    await again.request("/console/login");
    const loginCookie = again.cookies.get("steward_signin");
    expect(loginCookie).toBeDefined();
    const res = await fetch(`${base}/console/login`, { redirect: "manual" });
    const setCookie = res.headers.getSetCookie().join("\n");
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Lax/);
    expect(setCookie).toMatch(/Max-Age=\d+/);
  });

  it("a changed or foreign cookie is no session; a callback without the sign-in's state is refused", async () => {
    const owner = await signIn(base, "octo-admin");
    const session = owner.cookies.get("steward_session")!;
    const flipped = alterOneCharacter(session);
    const forged = new Visitor(base);
    forged.cookies.set("steward_session", flipped);
    const page = await forged.request("/console/deliveries");
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toMatch(/^\/console\/login\?next=/);
    // A sign-in cookie does not open as a session (sealed for another purpose).
    const swapped = new Visitor(base);
    await swapped.request("/console/login");
    swapped.cookies.set("steward_session", swapped.cookies.get("steward_signin")!);
    expect((await swapped.request("/console/deliveries")).status).toBe(303);

    const stranger = new Visitor(base);
    const cb = await stranger.request("/console/callback?code=abc&state=xyz");
    expect(cb.status).toBe(400);
  });

  it("signing out is a POST with the CSRF token; after it the cookie no longer opens a page", async () => {
    const v = await signIn(base, "dev-dana");
    const page = await v.request("/console");
    const csrf = v.csrfFrom(page.text);
    expect((await v.request("/console/logout", { form: {} })).status).toBe(403);
    const out = await v.request("/console/logout", { form: { csrf } });
    expect(out.status).toBe(303);
    expect(v.cookies.has("steward_session")).toBe(false);
    expect((await v.request("/console/deliveries")).status).toBe(303);
  });
});

describe("what an owner and a member see and may do", () => {
  it("the owner sees every repository's deliveries, the dead letter, and the decision with its reasons", async () => {
    const owner = await signIn(base, "octo-admin");
    const overview = await owner.visit("/console");
    expect(overview.text).toContain("Signed in as <strong>octo-admin</strong> (owner)");
    expect(overview.text).toContain('href="/console/dead"');
    const list = await owner.visit("/console/deliveries");
    expect(list.text).toContain("acme/web");
    expect(list.text).toContain("acme/service-billing");
    const dead = await owner.visit("/console/dead");
    expect(dead.status).toBe(200);
    const deadId = await deliveryIdOf("service-billing", "dead");
    expect(dead.text).toContain(deadId);
    const webId = await deliveryIdOf("web");
    const detail = await owner.visit(`/console/deliveries/${webId}`);
    expect(detail.text).toContain("accepted commit &quot;docs&quot; because it does not say break");
    expect(detail.text).toContain("x-github-event");
    expect(detail.text).not.toMatch(/x-hub-signature/i);
    expect(detail.text).not.toContain("&#34;head_commit&#34;");
    const withPayload = await owner.visit(`/console/deliveries/${webId}?payload=1`);
    expect(withPayload.text).toContain("&#34;head_commit&#34;");
  });

  it("a member without access to service-billing sees nothing of it and no owner pages or actions", async () => {
    const dana = await signIn(base, "dev-dana");
    const overview = await dana.visit("/console");
    expect(overview.text).toContain("Signed in as <strong>dev-dana</strong>");
    expect(overview.text).not.toContain("(owner)");
    expect(overview.text).not.toContain('href="/console/dead"');
    const list = await dana.visit("/console/deliveries");
    expect(list.text).toContain("acme/web");
    expect(list.text).not.toContain("service-billing");
    const named = await dana.visit("/console/deliveries?repository=acme%2Fservice-billing");
    expect(named.text).not.toContain("service-billing</td>");
    const deadId = await deliveryIdOf("service-billing", "dead");
    const detail = await dana.visit(`/console/deliveries/${deadId}`);
    expect(detail.status).toBe(404);
    expect(detail.text).not.toContain("break the rates");
    expect((await dana.visit("/console/dead")).status).toBe(403);
    expect((await dana.visit("/console/secrets")).status).toBe(403);
    expect((await dana.visit("/console/policies/acme/service-billing")).status).toBe(404);
    const live = await fetch(`${base}/console/events?view=deliveries`, { headers: { cookie: dana.cookieHeader() } });
    const reader = live.body!.getReader();
    const first =
      new TextDecoder().decode((await reader.read()).value) + new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    expect(first).toContain("acme/web");
    expect(first).not.toContain("service-billing");

    // Her own CSRF token does not make her an owner.
    const csrf = dana.csrfFrom(overview.text);
    const runs = world.pushRuns();
    const refused = await dana.request(`/console/deliveries/${deadId}/replay`, { form: { csrf } });
    expect(refused.status).toBe(403);
    await settle();
    expect(world.pushRuns()).toBe(runs);
  });

  it("the owner replays the dead letter with a POST carrying the CSRF token; without it nothing happens", async () => {
    const owner = await signIn(base, "octo-admin");
    const deadId = await deliveryIdOf("service-billing", "dead");
    const page = await owner.visit("/console/dead");
    const csrf = owner.csrfFrom(page.text);
    const runs = world.pushRuns();
    expect((await owner.request(`/console/deliveries/${deadId}/replay`, { form: { csrf: "wrong" } })).status).toBe(403);
    expect(
      (
        await owner.request(`/console/deliveries/${deadId}/replay`, {
          form: { csrf },
          headers: { origin: "https://evil.example" },
        })
      ).status,
    ).toBe(403);
    expect((await owner.request(`/console/deliveries/${deadId}/replay`, { method: "GET" })).status).toBe(404);
    await settle();
    expect(world.pushRuns()).toBe(runs);
    const done = await owner.visit(`/console/deliveries/${deadId}/replay`, { form: { csrf, back: "/console/dead" } });
    expect(done.url).toMatch(/\/console\/dead\?replayed=1$/);
    await settle();
    expect(world.pushRuns()).toBe(runs + 1);
    // Still refused by the handler: dead again, and "replay all matching" finds it once more.
    // "Replay all" first names what it would replay; nothing runs until that is confirmed.
    const filter = { csrf, repository: "acme/service-billing" };
    const asked = await owner.visit("/console/dead/replay", { form: filter });
    expect(asked.status).toBe(200);
    expect(asked.text).toContain('Replay <strong data-k="count">1</strong> dead letter matching');
    expect(asked.text).toContain(deadId);
    await settle();
    expect(world.pushRuns()).toBe(runs + 1);
    const confirmed = /name="confirmed" value="([^"]+)"/.exec(asked.text)![1]!;
    const all = await owner.visit("/console/dead/replay", { form: { ...filter, confirmed } });
    expect(all.text).toContain("Queued again: 1 delivery.");
    await settle();
    expect(world.pushRuns()).toBe(runs + 2);
  });
});

describe("console surface", () => {
  it("every rendered page and response header block reaches the suite's leak guard", async () => {
    const owner = await signIn(base, "octo-admin");
    const before = leakGuard.stats().outputs;
    await owner.visit("/console/deliveries");
    await owner.request("/console/login");
    // The page body and its headers, and the sign-in redirect's headers (cookies, Location).
    expect(leakGuard.stats().outputs).toBeGreaterThanOrEqual(before + 3);
    const payload = (await stack.steward.store.browse.browseDeliveries({ limit: 1 })).items[0]!.id;
    const page = await owner.visit(`/console/deliveries/${payload}?payload=1`);
    expect(leakGuard.scan("delivery page", page.text)).toEqual([]);
  });

  it("serves /steward.schema.json and sends / to the console", async () => {
    const schema = await fetch(`${base}/steward.schema.json`);
    expect(schema.status).toBe(200);
    expect(schema.headers.get("content-type")).toBe("application/schema+json");
    expect(await schema.json()).toMatchObject({ $schema: expect.stringContaining("json-schema") });
    const root = await fetch(`${base}/`, { redirect: "manual" });
    expect(root.headers.get("location")).toBe("/console");
  });

  it("check runs link to the console's page of the delivery that made them", async () => {
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: "web",
      head: "bad-policy",
      title: "policy",
      files: { ".github/steward.yml": "rerun:\n  max_atempts: 3\n" },
    });
    await settle();
    const [run] = stack.hub.domains.checks.checkRuns({
      owner: ORG,
      repo: "web",
      sha: pr.head_sha,
      name: "steward/config",
    }) as { details_url: string }[];
    expect(run?.details_url).toMatch(new RegExp(`^${base}/console/deliveries/[0-9a-f-]+$`));
    const owner = await signIn(base, "octo-admin");
    const page = await owner.visit(run!.details_url);
    expect(page.status).toBe(200);
    expect(page.text).toContain("pull_request");
  });

  it("shows a repository's effective policy with the file and line each value came from", async () => {
    stack.hub.control.pushFiles({
      owner: ORG,
      repo: ".github",
      files: { ".github/steward.yml": "rerun:\n  enabled: true\n  max_attempts: 4\n" },
      message: "org policy",
    });
    stack.hub.control.pushFiles({
      owner: ORG,
      repo: "web",
      files: { ".github/steward.yml": "# web's own\nrerun:\n  max_attempts: 3\n" },
      message: "web policy",
    });
    await settle();
    const dana = await signIn(base, "dev-dana");
    const page = await dana.visit("/console/policies/acme/web");
    expect(page.status).toBe(200);
    const row = (path: string) =>
      new RegExp(`<code>${path.replace(/\./g, "\\.")}</code></th><td><code>([^<]*)</code></td><td>([^<]*)</td>`)
        .exec(page.text)
        ?.slice(1);
    expect(row("rerun.max_attempts")).toEqual(["3", "acme/web:.github/steward.yml:3"]);
    expect(row("rerun.enabled")).toEqual(["true", "acme/.github:.github/steward.yml:2"]);
    expect(row("rerun.mode")).toEqual(["&#34;failed_jobs&#34;", "default"]);
    // The same as YAML, as a file would say it, each value with where it came from.
    const yaml = /<code data-k="yaml">([\s\S]*?)<\/code>/
      .exec(page.text)![1]!
      .replace(/&#(\d+);/g, (_, c: string) => String.fromCharCode(Number(c)));
    expect(yaml).toContain("  max_attempts: 3 # from acme/web:.github/steward.yml:3\n");
    expect(yaml).toContain("  enabled: true # from acme/.github:.github/steward.yml:2\n");
    expect(yaml).toContain("  mode: failed_jobs # handler default\n");
    expect((parse(yaml) as { rerun: Record<string, unknown> }).rerun).toMatchObject({
      enabled: true,
      max_attempts: 3,
      mode: "failed_jobs",
    });
  });

  it("without OAuth credentials the console is off and says so at its path", async () => {
    const off = await startSandboxStack({ env: { GITHUB_CLIENT_ID: "", GITHUB_CLIENT_SECRET: "" } });
    try {
      const page = await fetch(`${off.steward.url}/console`);
      expect(page.status).toBe(200);
      const text = await page.text();
      expect(text).toContain("The console is off");
      expect(text).toContain("GITHUB_CLIENT_ID");
      expect((await fetch(`${off.steward.url}/console/deliveries`)).status).toBe(404);
      expect((await fetch(`${off.steward.url}/console/login`)).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});
