// The console in a real browser: Debian's Chromium driven by playwright-core. Signs in through
// the sandbox hub's OAuth pages as an owner and as a member without access to a repository,
// checks what each sees and may do, replays a dead letter, follows a check run's details link,
// watches a delivery arrive live, reads with scripts off and moves by keyboard. Screenshots go
// to a temp dir, or to docs/console/ with STEWARD_SCREENSHOTS=docs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SandboxStack } from "../../src/sandbox/stack.js";
import { BROWSER_WAIT, browsers, haveChromium, signInAs, type Browsers } from "./chromium.js";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";

let browser: Browsers | undefined;
let world: ConsoleWorld;
let stack: SandboxStack;
let base: string;
const settle = () => world.settle();

beforeAll(async () => {
  if (!haveChromium) return;
  browser = browsers();
  world = await consoleWorld();
  stack = world.stack;
  base = world.base;
  stack.hub.control.pushFiles({
    owner: "acme",
    repo: ".github",
    files: { ".github/steward.yml": "rerun:\n  enabled: true\n  max_attempts: 3\n" },
    message: "org policy",
  });
  stack.hub.control.pushFiles({ owner: "acme", repo: "web", files: { "README.md": "# web\n" }, message: "docs" });
  stack.hub.control.pushFiles({
    owner: "acme",
    repo: "service-billing",
    files: { "rates.txt": "1\n" },
    message: "break the rates",
  });
  await settle();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe.skipIf(!haveChromium)("console in Chromium", { timeout: 120_000 }, () => {
  it("an owner signs in, sees every page, replays a dead letter and follows a check run's details link", async () => {
    const page = await browser!.open();
    await page.goto(`${base}/console`);
    await browser!.shot(page, "signed-out");
    await page.getByRole("link", { name: "Sign in with GitHub" }).click();
    await expect.poll(() => page.url(), BROWSER_WAIT).toContain(`${stack.hub.url}/login/oauth/authorize`);
    await browser!.shot(page, "sandbox-authorize");
    await page.getByRole("link", { name: "Sign in as octo-admin" }).click();
    await page.waitForURL(`${base}/console`);
    expect(await page.locator("header").innerText()).toContain("Signed in as octo-admin (owner)");
    await browser!.shot(page, "overview");

    await page.getByRole("link", { name: "Deliveries", exact: true }).click();
    await expect.poll(() => page.locator("main table").innerText(), BROWSER_WAIT).toContain("acme/service-billing");
    await browser!.shot(page, "deliveries");
    await page.getByLabel("Repository").selectOption("acme/web");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/repository=acme%2Fweb/);
    expect(await page.locator("main table").innerText()).not.toContain("service-billing");

    // The newest push to web: its page shows the decision and its reason.
    const web = (await stack.steward.store.browse.browseDeliveries({ limit: 1, repository: "acme/web", event: "push" }))
      .items[0]!;
    await page.getByRole("link", { name: web.id }).click();
    await expect
      .poll(() => page.locator("main").innerText(), BROWSER_WAIT)
      .toContain('accepted commit "docs" because it does not say break');
    await browser!.shot(page, "delivery");

    const dead = (await stack.steward.store.browse.browseDeliveries({ limit: 1, status: "dead" })).items[0]!;
    await page.getByRole("link", { name: "Dead letters" }).click();
    await expect.poll(() => page.locator("main").innerText(), BROWSER_WAIT).toContain(dead.id);
    await browser!.shot(page, "dead-letters");
    const runs = world.pushRuns();
    await page.getByRole("button", { name: `Replay ${dead.id}` }).click();
    await expect.poll(() => page.getByRole("status").innerText(), BROWSER_WAIT).toContain("Queued again: 1 delivery.");
    await settle();
    expect(world.pushRuns()).toBe(runs + 1);

    await page.goto(`${base}/console/policies/acme/web`);
    await expect
      .poll(() => page.locator("main").innerText(), BROWSER_WAIT)
      .toContain("acme/.github:.github/steward.yml:3");
    await browser!.shot(page, "policy");
    await page.getByRole("link", { name: "Deployments" }).click();
    await expect.poll(() => page.locator("h1").innerText(), BROWSER_WAIT).toBe("Deployments");
    await browser!.shot(page, "deployments");
    await page.getByRole("link", { name: "Secrets" }).click();
    await expect.poll(() => page.locator("h1").innerText(), BROWSER_WAIT).toBe("Secrets");
    await browser!.shot(page, "secrets");

    // Pausing a handler is a form on its page; what is paused is listed with its Resume button.
    await page.getByRole("link", { name: "Pauses" }).click();
    await expect
      .poll(async () => {
        await page.reload();
        return page.locator("main").innerText();
      }, BROWSER_WAIT)
      .toContain("Pause this handler");
    await page.locator('select[name="handler"]').selectOption("picky");
    await page.getByRole("button", { name: "Pause this handler" }).click();
    await expect.poll(() => page.getByRole("status").innerText(), BROWSER_WAIT).toBe("Paused.");
    expect(await page.locator("main table").innerText()).toContain("console:octo-admin");
    await browser!.shot(page, "pauses");
    await page.getByRole("button", { name: "Resume handler picky" }).click();
    await expect.poll(() => page.getByRole("status").innerText(), BROWSER_WAIT).toBe("Resumed.");
    expect(await page.locator("main").innerText()).toContain("Nothing is paused.");

    // A pull request with a broken policy: its check run's "Details" opens the delivery that made it.
    const pr = stack.hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "typo",
      title: "policy",
      files: { ".github/steward.yml": "rerun:\n  max_atempts: 3\n" },
    });
    await settle();
    const [run] = stack.hub.domains.checks.checkRuns({
      owner: "acme",
      repo: "web",
      sha: pr.head_sha,
      name: "steward/config",
    }) as { details_url: string }[];
    await page.goto(run!.details_url);
    await expect.poll(() => page.locator("main").innerText(), BROWSER_WAIT).toContain("pull_request.opened");
    expect(await page.locator("main").innerText()).toContain("checks");
  });

  it("a member without access to service-billing sees none of it and has no owner pages or actions", async () => {
    const page = await browser!.open();
    await signInAs(page, base, "dev-dana");
    expect(await page.locator("header").innerText()).not.toContain("(owner)");
    expect(await page.getByRole("link", { name: "Dead letters" }).count()).toBe(0);
    await page.getByRole("link", { name: "Deliveries", exact: true }).click();
    await expect.poll(() => page.locator("main table").innerText(), BROWSER_WAIT).toContain("acme/web");
    expect(await page.content()).not.toContain("service-billing");
    await browser!.shot(page, "member-deliveries");
    const dead = (await stack.steward.store.browse.browseDeliveries({ limit: 1, repository: "acme/service-billing" }))
      .items[0]!;
    const detail = await page.goto(`${base}/console/deliveries/${dead.id}`);
    expect(detail?.status()).toBe(404);
    expect(await page.content()).not.toContain("break the rates");
    expect((await page.goto(`${base}/console/dead`))?.status()).toBe(403);
    expect(await page.getByRole("button", { name: /Replay/ }).count()).toBe(0);
  });

  it("the deliveries list updates live, reads with scripts off, and is reachable by keyboard", async () => {
    const page = await browser!.open();
    await signInAs(page, base, "octo-admin");
    await page.goto(`${base}/console/deliveries`);
    stack.hub.control.pushFiles({
      owner: "acme",
      repo: "web",
      files: { "CHANGELOG.md": "live\n" },
      message: "live one",
    });
    await settle();
    const id = (await stack.steward.store.browse.browseDeliveries({ limit: 1, repository: "acme/web", event: "push" }))
      .items[0]!.id;
    // Not reloaded: the server-sent events replace the table.
    await expect.poll(() => page.locator("#live").innerText(), BROWSER_WAIT).toContain(id);

    await page.goto(`${base}/console`);
    // The skip link, the Steward home link, Overview, Deliveries.
    for (let i = 0; i < 4; i++) await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement?.textContent")).toBe("Deliveries");
    await page.keyboard.press("Enter");
    await page.waitForURL(`${base}/console/deliveries`);

    const noScript = await browser!.open({ javaScriptEnabled: false });
    await signInAs(noScript, base, "octo-admin");
    await noScript.goto(`${base}/console/deliveries`);
    expect(await noScript.locator("main table").innerText()).toContain(id);
  });
});
