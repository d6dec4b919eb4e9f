// Acknowledging a dead letter that must not run, over real HTTP against the sandbox stack: owners
// only, a POST with the CSRF token, recorded with who, when and why (the delivery's page, its
// history, the audit trail), shown apart on the dead-letters page and left out of "replay all";
// a replay that dies again is a new failure that the old acknowledgement does not cover. The
// overview's dead-letter count leaves acknowledged ones out and names them apart.
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";
import { signIn, type Visitor } from "./session.js";

let world: ConsoleWorld;
let owner: Visitor;
let csrf: string;
/** The dead letters of acme/web, newest first. */
let dead: string[];

beforeAll(async () => {
  world = await consoleWorld({ logger: pino({ level: "silent" }) });
  const { control } = world.stack.hub;
  control.pushFiles({ owner: "acme", repo: "web", files: { "a.txt": "1\n" }, message: "break one" });
  control.pushFiles({ owner: "acme", repo: "web", files: { "b.txt": "1\n" }, message: "break two" });
  control.pushFiles({ owner: "acme", repo: "web", files: { "c.txt": "1\n" }, message: "fine" });
  await world.settle();
  dead = (
    await world.stack.steward.store.browse.browseDeliveries({ limit: 50, status: "dead", repository: "acme/web" })
  ).items.map((d) => d.id);
  owner = await signIn(world.base, "octo-admin");
  csrf = owner.csrfFrom((await owner.visit("/console/dead")).text);
}, 120_000);

afterAll(async () => {
  await world?.stack.close();
});

const acknowledged = (page: string) => page.slice(page.indexOf('id="acknowledged"'));
/** The overview's dead-letter line: the count needing attention, and the acknowledged ones apart. */
const deadLine = async () => /data-k="dead">([\s\S]*?)<\/dd>/.exec((await owner.visit("/console")).text)?.[1];
const confirmedIn = (text: string) => /name="confirmed" value="([^"]+)"/.exec(text)?.[1];

describe("acknowledging a dead letter", { timeout: 120_000 }, () => {
  it("is refused without the CSRF token, to a member, and for a delivery that is not dead", async () => {
    expect(dead).toHaveLength(2);
    const [id] = dead;
    expect((await owner.request(`/console/deliveries/${id}/acknowledge`, { form: { csrf: "wrong" } })).status).toBe(
      403,
    );
    const member = await signIn(world.base, "dev-dana");
    const memberCsrf = member.csrfFrom((await member.visit("/console")).text);
    const refused = await member.request(`/console/deliveries/${id}/acknowledge`, { form: { csrf: memberCsrf } });
    expect(refused.status).toBe(403);
    expect((await member.visit(`/console/deliveries/${id}`)).text).not.toContain("Acknowledge");

    const done = (
      await world.stack.steward.store.browse.browseDeliveries({ limit: 1, status: "done", repository: "acme/web" })
    ).items[0]!;
    const notDead = await owner.request(`/console/deliveries/${done.id}/acknowledge`, { form: { csrf } });
    expect(notDead.status).toBe(409);
    expect(notDead.text).toContain("Nothing was recorded");

    expect(await world.stack.steward.store.kv.auditLog({ kind: "console_acknowledge", limit: 10 })).toEqual([]);
    const page = await owner.visit(`/console/deliveries/${id}`);
    expect(page.text).not.toContain('data-k="acknowledged"');
  });

  it("records who, when and why; the dead letter is shown apart and left out of replay all", async () => {
    const [first, second] = dead as [string, string];
    expect(await deadLine()).toBe('<a href="/console/dead">2</a>');
    const list = await owner.visit("/console/dead");
    expect(list.text).toContain(`Acknowledge ${first}`);
    const answer = await owner.visit(`/console/deliveries/${first}/acknowledge`, {
      form: { csrf, reason: "  a test push,\n never to run  " },
    });
    expect(answer.url).toContain(`/console/deliveries/${first}?acknowledged=1`);
    expect(answer.text).toContain('<p role="status">Acknowledged');
    expect(answer.text).toMatch(
      /data-k="acknowledged">by <strong>octo-admin<\/strong> <time [^>]+>[^<]+<\/time>: a test push, never to run/,
    );
    expect(answer.text).not.toContain("Acknowledge: leave it dead");
    const history = answer.text.slice(answer.text.indexOf('id="history"'));
    expect(history).toMatch(/acknowledged by <strong>octo-admin<\/strong>/);
    const audit = await world.stack.steward.store.kv.auditLog({ kind: "console_acknowledge", limit: 10 });
    expect(audit.map((a) => [a.details.delivery, a.details.login, a.details.note])).toEqual([
      [first, "octo-admin", "a test push, never to run"],
    ]);

    // Apart on the dead-letters page, with who and why; no acknowledge button for it any more.
    const after = await owner.visit("/console/dead");
    const main = after.text.slice(0, after.text.indexOf('id="acknowledged"'));
    expect(main).toContain(`Acknowledge ${second}`);
    expect(main).not.toContain(first);
    expect(acknowledged(after.text)).toContain(first);
    expect(acknowledged(after.text)).toContain("a test push, never to run");
    // The overview counts it apart: one dead letter needs attention, one was left dead on purpose.
    expect(await deadLine()).toBe(
      '<a href="/console/dead">1</a> <span data-k="acknowledged">(and 1 acknowledged: left dead on purpose)</span>',
    );

    // "Replay all" names only the other one, says one was left out, and replays only that one.
    const runs = world.pushRuns();
    const asked = await owner.visit("/console/dead/replay", { form: { csrf, repository: "acme/web" } });
    expect(asked.text).toContain('data-k="count">1<');
    expect(asked.text).toContain(second);
    expect(asked.text).not.toContain(`>${first}<`);
    expect(asked.text).toContain("Left out: 1 acknowledged dead letter");
    const done = await owner.visit("/console/dead/replay", {
      form: { csrf, repository: "acme/web", confirmed: confirmedIn(asked.text)! },
    });
    expect(done.text).toContain("Queued again: 1 delivery.");
    await world.settle();
    expect(world.pushRuns()).toBe(runs + 1);
    const history2 = (await owner.visit(`/console/deliveries/${first}`)).text;
    expect(history2.slice(history2.indexOf('id="history"'))).not.toContain("replayed by");
  });

  it("a replay by itself runs it again; dead again, it is a new failure no longer acknowledged", async () => {
    const [first] = dead as [string];
    const runs = world.pushRuns();
    const replayed = await owner.visit(`/console/deliveries/${first}/replay`, { form: { csrf } });
    expect(replayed.text).toContain("Queued again: 1 delivery.");
    await world.settle();
    expect(world.pushRuns()).toBe(runs + 1);
    const page = await owner.visit(`/console/deliveries/${first}`);
    expect(page.text).toContain("dead letter: not retried");
    expect(page.text).not.toContain('data-k="acknowledged"');
    expect(page.text).toContain("Acknowledge: leave it dead");
    // The history keeps the acknowledgement that was given.
    expect(page.text.slice(page.text.indexOf('id="history"'))).toMatch(/acknowledged by <strong>octo-admin/);
    const list = await owner.visit("/console/dead");
    expect(list.text.indexOf('id="acknowledged"')).toBe(-1);
    expect(await deadLine()).toBe('<a href="/console/dead">2</a>');
    expect(list.text).toContain(`Acknowledge ${first}`);
  });
});
