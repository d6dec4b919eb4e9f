// The deliveries list in the table's language, over real HTTP against the sandbox stack: each row
// says in one line what each handler decided (from the store's record of their outcomes);
// deliveries no handler took are hidden by default, counted, and shown on request; the event is
// a choice of the events that exist; filters in force show as chips that remove them; time
// presets set the window.
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";
import { signIn, type Visitor } from "./session.js";

let world: ConsoleWorld;
let owner: Visitor;

beforeAll(async () => {
  world = await consoleWorld({ logger: pino({ level: "silent" }) });
  const { control } = world.stack.hub;
  control.pushFiles({ owner: "acme", repo: "web", files: { "README.md": "# web\n" }, message: "docs" });
  await world.settle();
  owner = await signIn(world.base, "octo-admin");
}, 120_000);

afterAll(async () => {
  await world?.stack.close();
});

const unescape = (s: string) =>
  s
    .replace(/&#(\d+);/g, (_, c: string) => String.fromCharCode(Number(c)))
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, "&");
/** The rows of the list: delivery id -> its decision cell's text. */
function rows(page: string): Map<string, string> {
  const live = page.slice(page.indexOf('id="live"'));
  return new Map(
    [...live.matchAll(/<tr data-delivery="([^"]+)">[\s\S]*?<td data-k="decision">([\s\S]*?)<\/td>/g)].map((m) => [
      m[1]!,
      unescape(m[2]!.replace(/<[^>]+>/g, "")).trim(),
    ]),
  );
}

describe("the deliveries list", { timeout: 120_000 }, () => {
  it("says what each handler decided in one line, and hides deliveries no handler took (counted, shown on request)", async () => {
    const { browse } = world.stack.steward.store;
    const all = (await browse.browseDeliveries({ limit: 50 })).items;
    const decisions = await browse.decisionsOf(all.map((d) => d.id));
    const untaken = all.filter(
      (d) => d.status === "done" && (decisions.get(d.id) ?? []).every((x) => x.status === "skipped"),
    );
    // The check suites GitHub announces for the push: no handler here takes them.
    const issue = untaken.find((d) => d.event === "check_suite")!;
    expect(issue, "a delivery no handler took").toBeDefined();
    const push = all.find((d) => d.event === "push" && d.repository === "acme/web")!;

    const page = await owner.visit("/console/deliveries");
    const shown = rows(page.text);
    expect(shown.get(push.id)).toBe('picky: accepted commit "docs" because it does not say break');
    for (const d of untaken) expect(shown.has(d.id), d.id).toBe(false);
    expect(shown.size).toBe(all.length - untaken.length);
    const n = untaken.length;
    expect(page.text).toContain(`${n} no handler took ${n === 1 ? "is" : "are"} hidden`);

    const everything = await owner.visit("/console/deliveries?show=all");
    const listed = rows(everything.text);
    expect(listed.size).toBe(all.length);
    expect(listed.get(issue.id)).toBe("no handler");
    expect(everything.text).toContain("Deliveries no handler took are shown");
    // The setting rides along with the other filters (live stream, next page, the form).
    expect(everything.text).toContain('<input type="hidden" name="show" value="all">');
    expect(everything.text).toMatch(/data-live="\/console\/events\?view=deliveries&#38;show=all"/);
  });

  it("offers the events that exist as a choice, shows filters in force as chips that remove them, and time presets", async () => {
    const page = await owner.visit("/console/deliveries?event=push&repository=acme%2Fweb");
    const select = /<select name="event">([\s\S]*?)<\/select>/.exec(page.text)![1]!;
    const options = [...select.matchAll(/<option( selected)?>([^<]+)<\/option>/g)].map((m) => `${m[2]}${m[1] ?? ""}`);
    expect(options).toContain("push selected");
    expect(options).toContain("check_suite");
    expect(options).toContain("check_suite.requested");
    const chips = /<ul class="chips"[^>]*>([\s\S]*?)<\/ul>/.exec(page.text)![1]!;
    expect(unescape(chips)).toContain(
      '<span>event = push</span> <a href="/console/deliveries?repository=acme%2Fweb" aria-label="Remove the filter event = push">×</a>',
    );
    expect(unescape(chips)).toContain(
      '<a href="/console/deliveries?event=push" aria-label="Remove the filter repository = acme/web">',
    );
    // A preset keeps the other filters and sets the window's start, to the minute (UTC).
    const preset = /<a href="([^"]+)">last hour<\/a>/.exec(page.text)![1]!;
    const q = new URL(unescape(preset), world.base).searchParams;
    expect(q.get("event")).toBe("push");
    expect(q.get("repository")).toBe("acme/web");
    const since = Date.parse(`${q.get("since")}Z`);
    expect(Math.abs(since - (Date.now() - 3_600_000))).toBeLessThan(10 * 60_000);
    const within = await owner.visit(unescape(preset));
    expect(within.text).not.toContain('role="alert"');
    expect(rows(within.text).size).toBeGreaterThan(0);
    // Unfiltered: no chips.
    expect((await owner.visit("/console/deliveries")).text).not.toContain('class="chips"');
  });
});
