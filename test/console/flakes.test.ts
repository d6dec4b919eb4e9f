// /console/flakes, server-rendered: the flakiest jobs per repository with counts, last seen and a link to
// the run, filtered by repository and time, the same figures `steward flakes` prints; a member sees
// nothing of a repository they cannot access.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flakeFilters } from "../../handlers/rerun/console.js";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";
import { makeFlakes } from "./flakes-fixture.js";
import { signIn } from "./session.js";
import { stewardCli } from "../handlers/rerun/stack.js";

let world: ConsoleWorld;
let web: { redRunIds: number[]; redShas: string[] };
let billing: { redRunIds: number[]; redShas: string[] };

beforeAll(async () => {
  world = await consoleWorld();
  const settle = () => world.settle();
  web = await makeFlakes(world.stack, settle, "acme", "web", { times: 2 });
  billing = await makeFlakes(world.stack, settle, "acme", "service-billing", { job: "unit" });
}, 120_000);

afterAll(async () => {
  await world?.stack.close();
});

/** The table rows of a page's section for `repo`, as cell texts (tags stripped). */
function rowsOf(page: string, repo: string): string[][] {
  const section = new RegExp(`<h2 id="flakes-${repo.replace("/", "\\/")}">[\\s\\S]*?</table>`).exec(page)?.[0] ?? "";
  return [...section.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].slice(1).map((m) =>
    [...m[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) =>
      c[1]!
        .replace(/<[^>]+>/g, "")
        .replace(/\s+/g, " ")
        .trim(),
    ),
  );
}

async function cli(...args: string[]): Promise<string> {
  const { code, out } = await stewardCli(world.stack, "flakes", ...args);
  expect(code).toBe(0);
  return out;
}

describe("/console/flakes", () => {
  it("an owner sees each repository's flakiest jobs with counts, re-runs, last seen and the last flaky run", async () => {
    const owner = await signIn(world.base, "octo-admin");
    const page = await owner.visit("/console/flakes");
    expect(page.status).toBe(200);
    expect(page.text).toContain('<a href="/console/flakes" aria-current="page">Flaky jobs</a>');
    const webRows = rowsOf(page.text, "acme/web");
    expect(webRows).toHaveLength(1);
    expect(webRows[0]!.slice(0, 3)).toEqual(["E2E / e2e", "2", "2"]);
    expect(webRows[0]![3]).toMatch(/^(less than a minute|\d+ min) ago$/);
    expect(page.text).toMatch(/<time datetime="[^"]+" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC" data-rel>/);
    const lastRed = web.redRunIds[1]!;
    expect(webRows[0]![4]).toBe(`run ${lastRed} on ${web.redShas[1]!.slice(0, 7)} (deliveries)`);
    expect(page.text).toContain(`href="${world.stack.hub.url}/acme/web/actions/runs/${lastRed}"`);
    expect(page.text).toContain(`href="/console/deliveries?repository=acme%2Fweb&#38;event=workflow_run"`);
    expect(rowsOf(page.text, "acme/service-billing").map((r) => r.slice(0, 3))).toEqual([["E2E / unit", "1", "1"]]);
    // The flakiest repository first.
    expect(page.text.indexOf('id="flakes-acme/web"')).toBeLessThan(
      page.text.indexOf('id="flakes-acme/service-billing"'),
    );
  });

  it("matches what steward flakes prints for the same repository and window", async () => {
    const owner = await signIn(world.base, "octo-admin");
    const page = await owner.visit("/console/flakes?repo=acme%2Fweb&since=7d");
    expect(page.text).not.toContain("service-billing</h2>");
    expect(page.text).toContain("steward flakes --repo OWNER/NAME --since 7d");
    const [row] = rowsOf(page.text, "acme/web");
    const printed = await cli("--repo", "acme/web", "--since", "7d");
    const line = printed.split("\n").find((l) => l.includes("E2E / e2e"))!;
    const [count, rerun] = line.trim().split(/\s+/);
    expect([row![1], row![2]]).toEqual([count, rerun]);
    expect(line).toContain(web.redShas[1]!.slice(0, 7));
  });

  it("a repository without flakes shows none; a bad duration says so and falls back to 30 days", async () => {
    const owner = await signIn(world.base, "octo-admin");
    const none = await owner.visit("/console/flakes?repo=acme%2F.github");
    expect(none.text).toContain("No flaky job recorded for acme/.github in the last 30d.");
    const bad = await owner.visit("/console/flakes?since=soon");
    expect(bad.text).toContain(
      "&#34;soon&#34; is not a duration from 1 minute to 180 days (like 7d or 12h): showing the last 30d",
    );
    expect(rowsOf(bad.text, "acme/web")).toHaveLength(1);
    expect(flakeFilters(new URLSearchParams("since=400d"), ["acme/web"])).toMatchObject({
      since: "30d",
      problem: expect.stringContaining("400d"),
    });
    expect(flakeFilters(new URLSearchParams("since=12h&repo=ACME/WEB"), ["acme/web"])).toMatchObject({
      since: "12h",
      sinceMs: 12 * 3_600_000,
      repos: ["acme/web"],
      repo: "acme/web",
    });
  });

  it("a member without access to service-billing sees none of its flakes, even when asking for it by name", async () => {
    const dana = await signIn(world.base, "dev-dana");
    const all = await dana.visit("/console/flakes");
    expect(rowsOf(all.text, "acme/web")).toHaveLength(1);
    expect(all.text).not.toContain("service-billing");
    const asked = await dana.visit("/console/flakes?repo=acme%2Fservice-billing");
    expect(asked.status).toBe(200);
    expect(asked.text).not.toContain("service-billing");
    expect(asked.text).not.toContain(String(billing.redRunIds[0]));
    expect(asked.text).toContain("No flaky job recorded in the last 30d.");
  });
});
