// Pauses on the console, over real HTTP against the sandbox stack: an owner pauses and resumes a
// handler and an installation with CSRF-checked POST forms, the overview and /console/pauses show
// what is paused, the work a pause covers waits (recorded and answered as usual) and runs on the
// resume; a member may neither see the page nor pause anything.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { SandboxStack } from "../../src/sandbox/stack.js";
import { listPauses } from "../../src/engine/pauses.js";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";
import { signIn, type Visitor } from "./session.js";

const ORG = "acme";
let world: ConsoleWorld;
let stack: SandboxStack;
let base: string;

beforeAll(async () => {
  world = await consoleWorld();
  stack = world.stack;
  base = world.base;
});
afterAll(async () => {
  await stack?.close();
});

/** The pauses page once the app's installations are counted (GET /app, at start): its forms are all there. */
async function pausesPage(owner: Visitor) {
  return vi.waitFor(
    async () => {
      const page = await owner.visit("/console/pauses");
      expect(page.text).toContain("Pause this handler");
      return page;
    },
    { timeout: 60_000, interval: 200 },
  );
}

const scopes = async () => (await listPauses(stack.steward.store.kv)).map((p) => [p.scope, p.by]);

describe("pausing from the console", { timeout: 120_000 }, () => {
  it("an owner pauses a handler with the form's CSRF token; its deliveries wait and run on resume", async () => {
    const owner = await signIn(base, "octo-admin");
    const page = await pausesPage(owner);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<p data-k="paused">Nothing is paused.</p>');
    const csrf = owner.csrfFrom(page.text);

    // Without the token, or from another site, nothing is paused.
    expect((await owner.request("/console/pauses/pause", { form: { handler: "picky" } })).status).toBe(403);
    expect(
      (
        await owner.request("/console/pauses/pause", {
          form: { csrf, handler: "picky" },
          headers: { origin: "https://evil.example" },
        })
      ).status,
    ).toBe(403);
    // A form naming nothing pauses nothing (everything is said in so many words).
    expect((await owner.request("/console/pauses/pause", { form: { csrf } })).status).toBe(400);
    expect(await scopes()).toEqual([]);

    const paused = await owner.request("/console/pauses/pause", { form: { csrf, handler: "picky" } });
    expect(paused.status).toBe(303);
    expect(paused.headers.get("location")).toBe("/console/pauses?done=paused");
    expect(await scopes()).toEqual([[{ kind: "handler", handler: "picky" }, "console:octo-admin"]]);

    const overview = await owner.visit("/console");
    expect(overview.text).toMatch(/<li><strong>handler picky<\/strong> paused by console:octo-admin at /);
    const listed = await owner.visit("/console/pauses");
    expect(listed.text).toContain("Resume handler picky");

    // The delivery is recorded and answered; the paused handler does not run it.
    const runs = world.pushRuns();
    stack.hub.control.pushFiles({ owner: ORG, repo: "web", files: { "a.txt": "1\n" }, message: "while paused" });
    await stack.hub.control.settled();
    const held = await vi.waitFor(
      async () => {
        const page = await stack.steward.store.browse.browseDeliveries({
          limit: 1,
          repository: `${ORG}/web`,
          event: "push",
        });
        const record = await stack.steward.store.deliveries.getDelivery(page.items[0]!.id);
        expect(record?.delivery.status).toBe("queued");
        expect(record?.delivery.nextRunAt.getTime()).toBeGreaterThan(Date.now());
        return page.items[0]!.id;
      },
      { timeout: 60_000, interval: 200 },
    );
    expect(world.pushRuns()).toBe(runs);

    const resumed = await owner.request("/console/pauses/resume", { form: { csrf, handler: "picky" } });
    expect(resumed.status).toBe(303);
    expect(await scopes()).toEqual([]);
    await vi.waitFor(
      async () => expect((await stack.steward.store.deliveries.getDelivery(held))?.delivery.status).toBe("done"),
      { timeout: 60_000, interval: 200 },
    );
    expect(world.pushRuns()).toBe(runs + 1);
    expect((await owner.visit("/console")).text).toContain('<p data-k="paused">Nothing is paused.');

    const audit = await stack.steward.store.kv.auditLog({ kind: "pause" });
    expect(audit.map((a) => a.details)).toContainEqual({ scope: "handler picky", by: "console:octo-admin" });
  });

  it("an owner pauses and resumes the installation they own, and everything", async () => {
    const owner = await signIn(base, "octo-admin");
    const csrf = owner.csrfFrom((await pausesPage(owner)).text);
    const installation = /<option value="(\d+)">acme \(/.exec((await owner.visit("/console/pauses")).text)?.[1];
    expect(installation).toBeDefined();
    expect((await owner.request("/console/pauses/pause", { form: { csrf, installation: installation! } })).status).toBe(
      303,
    );
    expect((await owner.request("/console/pauses/pause", { form: { csrf, all: "1" } })).status).toBe(303);
    const page = await owner.visit("/console/pauses");
    expect(page.text).toContain(`Resume installation ${installation}`);
    expect(page.text).toContain("Resume everything");
    expect((await owner.request("/console/pauses/resume", { form: { csrf, all: "1" } })).status).toBe(303);
    expect(
      (await owner.request("/console/pauses/resume", { form: { csrf, installation: installation! } })).status,
    ).toBe(303);
    expect(await scopes()).toEqual([]);
  });

  it("the overview shows the oldest queued delivery's age while everything is paused, then lag and queue time", async () => {
    const owner = await signIn(base, "octo-admin");
    const csrf = owner.csrfFrom((await pausesPage(owner)).text);
    expect((await owner.visit("/console")).text).toContain('<dd data-k="oldest">none waiting</dd>');
    expect((await owner.request("/console/pauses/pause", { form: { csrf, all: "1" } })).status).toBe(303);
    stack.hub.control.pushFiles({ owner: ORG, repo: "web", files: { "b.txt": "2\n" }, message: "held" });
    await stack.hub.control.settled();
    await vi.waitFor(
      async () =>
        expect((await owner.visit("/console")).text).toMatch(
          /<dd data-k="oldest">due [1-9][\d.]* (s|min) ago, not yet claimed<\/dd>/,
        ),
      { timeout: 60_000, interval: 250 },
    );
    expect((await owner.request("/console/pauses/resume", { form: { csrf, all: "1" } })).status).toBe(303);
    await world.settle();
    // Every replica's record (here one), written every few seconds: the held delivery's wait is in it.
    await vi.waitFor(
      async () => {
        const text = (await owner.visit("/console")).text;
        expect(text).toContain('<dd data-k="oldest">none waiting</dd>');
        const queued =
          /<tr data-timing="queue"><th scope="row">[^<]+<\/th><td>(\d+)<\/td><td>([^<]+)<\/td><td>([^<]+)<\/td><td>([^<]+)<\/td>/.exec(
            text,
          );
        expect(queued, "queue time row").not.toBeNull();
        expect(Number(queued![1])).toBeGreaterThan(0);
        // The longest wait is the paused one: at least the second the overview saw it waiting.
        expect(queued![4]).toMatch(/^([1-9][\d.]* s|[\d.]+ min)$/);
        expect(text).toMatch(/<tr data-timing="lag"><th scope="row">[^<]+<\/th><td>[1-9]\d*<\/td>/);
      },
      { timeout: 60_000, interval: 500 },
    );
  });

  it("a member may not see the page nor pause anything", async () => {
    const member = await signIn(base, "dev-dana");
    const overview = await member.visit("/console");
    expect(overview.text).toContain("Nothing is paused.");
    expect(overview.text).not.toContain('href="/console/pauses"');
    expect((await member.visit("/console/pauses")).status).toBe(403);
    const csrf = member.csrfFrom(overview.text);
    const refused = await member.request("/console/pauses/pause", { form: { csrf, handler: "picky" } });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("you own 0 of its 1");
    expect((await member.request("/console/pauses/pause", { form: { csrf, all: "1" } })).status).toBe(403);
    expect(await scopes()).toEqual([]);
  });
});
