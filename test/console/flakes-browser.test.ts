// /console/flakes in Chromium (playwright-core, Debian's /usr/bin/chromium): reached from the
// console's navigation, filtered by repository and time through the form, with the counts and the
// link to the last flaky run. Screenshot to docs/console/flakes.png with STEWARD_SCREENSHOTS=docs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_WAIT, browsers, haveChromium, signInAs, type Browsers } from "./chromium.js";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";
import { makeFlakes } from "./flakes-fixture.js";

let world: ConsoleWorld;
let browser: Browsers | undefined;
let web: { redRunIds: number[] };

beforeAll(async () => {
  if (!haveChromium) return;
  browser = browsers();
  world = await consoleWorld();
  const settle = () => world.settle();
  web = await makeFlakes(world.stack, settle, "acme", "web", { times: 2 });
  await makeFlakes(world.stack, settle, "acme", "api", { job: "unit" });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await world?.stack.close();
});

describe.skipIf(!haveChromium)("flaky jobs in Chromium", { timeout: 120_000 }, () => {
  it("an owner opens Flaky jobs from the navigation, filters by repository and window, and follows the run link", async () => {
    const page = await browser!.open();
    const base = world.base;
    await signInAs(page, base, "octo-admin");

    await page.getByRole("link", { name: "Flaky jobs" }).click();
    await page.waitForURL(`${base}/console/flakes`);
    expect(await page.locator("h1").innerText()).toBe("Flaky jobs");
    const webTable = page.getByRole("region", { name: "acme/web" }).getByRole("table");
    await expect.poll(() => webTable.innerText(), BROWSER_WAIT).toContain("E2E / e2e");
    const cells = await webTable.locator("tbody tr").first().locator("td").allInnerTexts();
    expect(cells.slice(0, 3)).toEqual(["E2E / e2e", "2", "2"]);
    expect(await page.getByRole("region", { name: "acme/api" }).getByRole("table").innerText()).toContain("E2E / unit");
    await browser!.shot(page, "flakes");

    await page.getByLabel("Repository").selectOption("acme/api");
    await page.getByLabel("Since").selectOption("7d");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/repo=acme%2Fapi&since=7d/);
    expect(await page.getByRole("region", { name: "acme/web" }).count()).toBe(0);
    expect(await page.getByRole("region", { name: "acme/api" }).getByRole("table").innerText()).toContain("E2E / unit");
    expect(await page.getByLabel("Since").inputValue()).toBe("7d");

    await page.getByLabel("Repository").selectOption("acme/web");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/repo=acme%2Fweb/);
    const last = web.redRunIds[1]!;
    expect(await page.getByRole("link", { name: `run ${last}` }).getAttribute("href")).toBe(
      `${world.stack.hub.url}/acme/web/actions/runs/${last}`,
    );
    await page.locator("main").getByRole("link", { name: "deliveries", exact: true }).click();
    await page.waitForURL(/\/console\/deliveries\?repository=acme%2Fweb&event=workflow_run/);
    await expect.poll(() => page.locator("main table").innerText(), BROWSER_WAIT).toContain("workflow_run");
  });
});
