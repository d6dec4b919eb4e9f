// The console at phone width (390 px) in Chromium, and its aids to reading: every page fits the
// width (no sideways scrolling), the skip link takes keyboard focus to the main content, the
// navigation marks the page shown, times read relative with the absolute one kept, and the live
// list announces new deliveries politely and can be paused.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { BROWSER_WAIT, browsers, haveChromium, signInAs, type Browsers } from "./chromium.js";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";

let browser: Browsers | undefined;
let world: ConsoleWorld;
let base: string;

beforeAll(async () => {
  if (!haveChromium) return;
  browser = browsers();
  world = await consoleWorld();
  base = world.base;
  const { control } = world.stack.hub;
  control.pushFiles({
    owner: "acme",
    repo: ".github",
    files: { ".github/steward.yml": "rerun:\n  enabled: true\n  max_attempts: 3\n" },
    message: "org policy",
  });
  control.pushFiles({ owner: "acme", repo: "web", files: { "README.md": "# web\n" }, message: "docs" });
  control.pushFiles({ owner: "acme", repo: "service-billing", files: { "r.txt": "1\n" }, message: "break the rates" });
  await world.settle();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await world?.stack.close();
});

/** How far the page reaches past the viewport's width (0: it does not scroll sideways). */
const overflow = (page: Page) =>
  page.evaluate<number>("document.documentElement.scrollWidth - document.documentElement.clientWidth");

describe.skipIf(!haveChromium)("console at phone width", { timeout: 180_000 }, () => {
  it("every page fits 390 px without scrolling sideways", async () => {
    const page = await browser!.open({ width: 390 });
    await signInAs(page, base, "octo-admin");
    const { browse } = world.stack.steward.store;
    const dead = (await browse.browseDeliveries({ limit: 1, status: "dead" })).items[0]!;
    const web = (await browse.browseDeliveries({ limit: 1, repository: "acme/web", event: "push" })).items[0]!;
    const pages: [string, string][] = [
      ["overview", "/console"],
      ["deliveries", "/console/deliveries"],
      ["delivery", `/console/deliveries/${encodeURIComponent(web.id)}`],
      ["dead-delivery", `/console/deliveries/${encodeURIComponent(dead.id)}`],
      ["dead-letters", "/console/dead"],
      ["pauses", "/console/pauses"],
      ["policy", "/console/policies/acme/web"],
      ["deployments", "/console/deployments"],
      ["secrets", "/console/secrets"],
      ["flakes", "/console/flakes"],
    ];
    for (const [name, path] of pages) {
      const answer = await page.goto(`${base}${path}`);
      expect(answer?.status(), path).toBe(200);
      expect(await overflow(page), `${path} scrolls sideways at 390 px`).toBe(0);
      await browser!.shot(page, `phone-${name}`);
    }
    // The payload (long lines) scrolls inside its own box, not the page.
    await page.goto(`${base}/console/deliveries/${encodeURIComponent(web.id)}?payload=1`);
    expect(await overflow(page)).toBe(0);
  });

  it("the skip link is the first stop by keyboard and moves focus to the main content", async () => {
    const page = await browser!.open({ width: 390 });
    await signInAs(page, base, "octo-admin");
    await page.goto(`${base}/console/deliveries`);
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement?.textContent")).toBe("Skip to main content");
    // Shown while focused (it is off-screen otherwise).
    const box = await page.getByRole("link", { name: "Skip to main content" }).boundingBox();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    await page.keyboard.press("Enter");
    await expect.poll(() => page.evaluate("document.activeElement?.id"), BROWSER_WAIT).toBe("main");
    // The next Tab continues inside the main content, past the navigation.
    await page.keyboard.press("Tab");
    expect(await page.evaluate('document.activeElement?.closest("main") !== null')).toBe(true);
  });

  it("marks the current page in the navigation and shows times relative with the absolute one on hover", async () => {
    const page = await browser!.open();
    await signInAs(page, base, "octo-admin");
    await page.goto(`${base}/console/deliveries`);
    const nav = page.getByRole("navigation", { name: "Console" });
    expect(await nav.getByRole("link", { name: "Deliveries" }).getAttribute("aria-current")).toBe("page");
    expect(await nav.getByRole("link", { name: "Overview" }).getAttribute("aria-current")).toBeNull();
    const first = page.locator("#live time").first();
    expect(await first.innerText()).toMatch(/^(less than a minute|\d+ min) ago$/);
    const datetime = (await first.getAttribute("datetime"))!;
    expect(await first.getAttribute("title")).toBe(datetime.replace("T", " ").replace(/\.\d+Z$/, " UTC"));
    // A delivery's page belongs to the list: its link is marked as the current section.
    await page.locator("#live tr[data-delivery] a").first().click();
    await page.waitForURL(/\/console\/deliveries\/.+/);
    expect(await nav.getByRole("link", { name: "Deliveries" }).getAttribute("aria-current")).toBe("true");
  });

  it("the live list announces new deliveries in a status line, and holds them while paused", async () => {
    const page = await browser!.open();
    await signInAs(page, base, "octo-admin");
    await page.goto(`${base}/console/deliveries`);
    const pause = page.getByRole("button", { name: "Pause live updates" });
    const status = page.locator("#live-status");
    // The stream's first list (the one the page already shows) has arrived: what comes next is new.
    await expect.poll(() => page.locator("#live").getAttribute("data-received"), BROWSER_WAIT).not.toBeNull();
    expect(await status.getAttribute("aria-live")).toBe("polite");
    await pause.click();
    expect(await pause.getAttribute("aria-pressed")).toBe("true");
    await expect.poll(() => status.innerText(), BROWSER_WAIT).toBe("Live updates paused.");

    world.stack.hub.control.pushFiles({ owner: "acme", repo: "web", files: { "a.md": "a\n" }, message: "held one" });
    await world.settle();
    // The push (its check suite, which no handler takes, is hidden from the list).
    const id = (
      await world.stack.steward.store.browse.browseDeliveries({ limit: 1, repository: "acme/web", event: "push" })
    ).items[0]!.id;
    // The new list arrived and is held: the page still shows the old one.
    await expect.poll(() => status.innerText(), BROWSER_WAIT).toContain("newer figures are waiting");
    expect(await page.locator("#live").innerText()).not.toContain(id);

    await pause.click();
    expect(await pause.getAttribute("aria-pressed")).toBe("false");
    await expect.poll(() => page.locator("#live").innerText(), BROWSER_WAIT).toContain(id);
    expect(await status.innerText()).toMatch(/^\d+ new deliver(y|ies) \(updated \d\d:\d\d:\d\d UTC\)$/);
    // Focus stayed where it was: on the button.
    expect(await page.evaluate("document.activeElement?.textContent")).toBe("Pause live updates");
  });
});
