// Facts on the overview, over real HTTP against the sandbox stack: after a push of the
// organisation's secrets.yml runs a sync, an owner sees when it ran, who ran it and what it did
// (from the record the sync wrote), beside the next scheduled run, and a member without ownership
// sees no sync at all; the API budget per installation shows what GitHub's last answer said: what
// is left, of how much, and when it resets.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { SandboxStack } from "../../src/sandbox/stack.js";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";
import { signIn } from "./session.js";

let world: ConsoleWorld;
let stack: SandboxStack;

beforeAll(async () => {
  world = await consoleWorld();
  stack = world.stack;
});
afterAll(async () => {
  await stack?.close();
});

describe("the overview's facts", { timeout: 120_000 }, () => {
  it("shows the last sync's time, runner and result from its record, the next run, and the API budget with its reset", async () => {
    const installation = stack.hub.control.installation("acme")!.id;
    const resetAt = new Date(Math.ceil((Date.now() + 1_800_000) / 1000) * 1000);
    stack.hub.control.setRateLimit(installation, { limit: 12_500, remaining: 9_000, resetAt });
    const owner = await signIn(world.base, "octo-admin");
    const before = await owner.visit("/console");
    // The periodic sync is scheduled at installation; none has run yet.
    expect(/<tr data-org="acme">([\s\S]*?)<\/tr>/.exec(before.text)?.[1]).toMatch(/<td>never<\/td>[\s\S]*periodic/);

    stack.hub.control.pushFiles({
      owner: "acme",
      repo: ".github",
      files: {
        ".github/steward/secrets.yml": 'variables:\n  NODE_VERSION:\n    value: "20"\n    repositories: [web]\n',
      },
      message: "sync variables",
    });
    const row = await vi.waitFor(
      async () => {
        await world.settle();
        const page = await owner.visit("/console");
        const found = /<tr data-org="acme">([\s\S]*?)<\/tr>/.exec(page.text)?.[1];
        expect(found).toContain("by the Steward service");
        return found!;
      },
      { timeout: 60_000, interval: 250 },
    );
    expect(row).toMatch(/<td>1 written, 0 failed in \d+ repositories<\/td>/);

    const overview = (await owner.visit("/console")).text;
    const budget = new RegExp(`<tr data-installation="${installation}">([\\s\\S]*?)</tr>`).exec(overview)?.[1];
    expect(budget).toMatch(/^<td>\d+<\/td><td>\d+<\/td><td>12500<\/td><td><time datetime="([^"]+)"/);
    // The reset on this machine's clock, measured from the answer's whole-second Date (up to a second
    // early) with the second of margin every wait keeps.
    const shown = Date.parse(/<td>12500<\/td><td><time datetime="([^"]+)"/.exec(budget!)?.[1] ?? "");
    expect(shown).toBeGreaterThanOrEqual(resetAt.getTime());
    expect(shown).toBeLessThanOrEqual(resetAt.getTime() + 2_500);

    const member = await signIn(world.base, "dev-dana");
    expect((await member.visit("/console")).text).not.toContain('data-org="acme"');
  });
});
