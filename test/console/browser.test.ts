// The console in a real browser: Debian's Chromium driven by playwright-core. Signs in through
// the sandbox hub's OAuth pages as an owner and as a member without access to a repository,
// checks what each sees and may do, replays a dead letter, follows a check run's details link,
// watches a delivery arrive live, reads with scripts off and moves by keyboard. Screenshots go
// to a temp dir, or to docs/console/ with STEWARD_SCREENSHOTS=docs.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SandboxStack } from "../../src/sandbox/stack.js";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";

const CHROMIUM = "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
// Pages change after navigation, a POST or a live event: expect.poll's 1 s default is too short on a loaded machine.
const BROWSER_WAIT = { timeout: 30_000 };
if (!haveChromium) console.warn(`browser tests skipped: no ${CHROMIUM} (.ci/run installs Debian's chromium)`);

const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const shotsDir = process.env.STEWARD_SCREENSHOTS === "docs" ? fileURLToPath(new URL("../../docs/console/", import.meta.url)) : mkdtempSync(join(tmpdir(), "steward-shots-"));
const profiles: string[] = [];
const contexts: BrowserContext[] = [];

let world: ConsoleWorld;
let stack: SandboxStack;
let base: string;
const settle = () => world.settle();

/** A fresh browser profile (its own --user-data-dir) per person. */
async function browserFor(opts: { javaScriptEnabled?: boolean } = {}): Promise<Page> {
  const dir = mkdtempSync(join(tmpdir(), "steward-chromium-"));
  profiles.push(dir);
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 900 },
    ...(opts.javaScriptEnabled === false ? { javaScriptEnabled: false } : {}),
  });
  contexts.push(context);
  return context.pages()[0] ?? context.newPage();
}

async function signInAs(page: Page, login: string): Promise<void> {
  await page.goto(`${base}/console`);
  await page.getByRole("link", { name: "Sign in with GitHub" }).click();
  await page.getByRole("link", { name: `Sign in as ${login}` }).click();
  await page.waitForURL(`${base}/console`);
  await expect.poll(() => page.locator("header").innerText(), BROWSER_WAIT).toContain(`Signed in as ${login}`);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(shotsDir, `${name}.png`), fullPage: true });
}

beforeAll(async () => {
  if (!haveChromium) return;
  mkdirSync(shotsDir, { recursive: true });
  world = await consoleWorld();
  stack = world.stack;
  base = world.base;
  stack.hub.control.pushFiles({ owner: "acme", repo: ".github", files: { ".github/steward.yml": "rerun:\n  enabled: true\n  max_attempts: 3\n" }, message: "org policy" });
  stack.hub.control.pushFiles({ owner: "acme", repo: "web", files: { "README.md": "# web\n" }, message: "docs" });
  stack.hub.control.pushFiles({ owner: "acme", repo: "service-billing", files: { "rates.txt": "1\n" }, message: "break the rates" });
  await settle();
}, 60_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  for (const d of profiles) rmSync(d, { recursive: true, force: true });
  if (process.env.STEWARD_SCREENSHOTS !== "docs") rmSync(shotsDir, { recursive: true, force: true });
  await stack?.close();
});

describe.skipIf(!haveChromium)("console in Chromium", { timeout: 120_000 }, () => {
  it("an owner signs in, sees every page, replays a dead letter and follows a check run's details link", async () => {
    const page = await browserFor();
    await page.goto(`${base}/console`);
    await shot(page, "signed-out");
    await page.getByRole("link", { name: "Sign in with GitHub" }).click();
    await expect.poll(() => page.url(), BROWSER_WAIT).toContain(`${stack.hub.url}/login/oauth/authorize`);
    await shot(page, "sandbox-authorize");
    await page.getByRole("link", { name: "Sign in as octo-admin" }).click();
    await page.waitForURL(`${base}/console`);
    expect(await page.locator("header").innerText()).toContain("Signed in as octo-admin (owner)");
    await shot(page, "overview");

    await page.getByRole("link", { name: "Deliveries", exact: true }).click();
    await expect.poll(() => page.locator("main table").innerText(), BROWSER_WAIT).toContain("acme/service-billing");
    await shot(page, "deliveries");
    await page.getByLabel("Repository").selectOption("acme/web");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/repository=acme%2Fweb/);
    expect(await page.locator("main table").innerText()).not.toContain("service-billing");

    // The newest push to web: its page shows the decision and its reason.
    const web = (await stack.steward.store.browse.browseDeliveries({ limit: 1, repository: "acme/web", event: "push" })).items[0]!;
    await page.getByRole("link", { name: web.id }).click();
    await expect.poll(() => page.locator("main").innerText(), BROWSER_WAIT).toContain('accepted commit "docs" because it does not say break');
    await shot(page, "delivery");

    const dead = (await stack.steward.store.browse.browseDeliveries({ limit: 1, status: "dead" })).items[0]!;
    await page.getByRole("link", { name: "Dead letters" }).click();
    await expect.poll(() => page.locator("main").innerText(), BROWSER_WAIT).toContain(dead.id);
    await shot(page, "dead-letters");
    const runs = world.pushRuns();
    await page.getByRole("button", { name: `Replay ${dead.id}` }).click();
    await expect.poll(() => page.getByRole("status").innerText(), BROWSER_WAIT).toContain("Queued again: 1 delivery.");
    await settle();
    expect(world.pushRuns()).toBe(runs + 1);

    await page.goto(`${base}/console/policies/acme/web`);
    await expect.poll(() => page.locator("main").innerText(), BROWSER_WAIT).toContain("acme/.github:.github/steward.yml:3");
    await shot(page, "policy");
    await page.getByRole("link", { name: "Deployments" }).click();
    await expect.poll(() => page.locator("h1").innerText(), BROWSER_WAIT).toBe("Deployments");
    await shot(page, "deployments");
    await page.getByRole("link", { name: "Secrets" }).click();
    await expect.poll(() => page.locator("h1").innerText(), BROWSER_WAIT).toBe("Secrets");
    await shot(page, "secrets");

    // A pull request with a broken policy: its check run's "Details" opens the delivery that made it.
    const pr = stack.hub.control.openPullRequest({ owner: "acme", repo: "web", head: "typo", title: "policy", files: { ".github/steward.yml": "rerun:\n  max_atempts: 3\n" } });
    await settle();
    const [run] = stack.hub.domains.checks.checkRuns({ owner: "acme", repo: "web", sha: pr.head_sha, name: "steward/config" }) as { details_url: string }[];
    await page.goto(run!.details_url);
    await expect.poll(() => page.locator("main").innerText(), BROWSER_WAIT).toContain("pull_request.opened");
    expect(await page.locator("main").innerText()).toContain("checks");
  });

  it("a member without access to service-billing sees none of it and has no owner pages or actions", async () => {
    const page = await browserFor();
    await signInAs(page, "dev-dana");
    expect(await page.locator("header").innerText()).not.toContain("(owner)");
    expect(await page.getByRole("link", { name: "Dead letters" }).count()).toBe(0);
    await page.getByRole("link", { name: "Deliveries", exact: true }).click();
    await expect.poll(() => page.locator("main table").innerText(), BROWSER_WAIT).toContain("acme/web");
    expect(await page.content()).not.toContain("service-billing");
    await shot(page, "member-deliveries");
    const dead = (await stack.steward.store.browse.browseDeliveries({ limit: 1, repository: "acme/service-billing" })).items[0]!;
    const detail = await page.goto(`${base}/console/deliveries/${dead.id}`);
    expect(detail?.status()).toBe(404);
    expect(await page.content()).not.toContain("break the rates");
    expect((await page.goto(`${base}/console/dead`))?.status()).toBe(403);
    expect(await page.getByRole("button", { name: /Replay/ }).count()).toBe(0);
  });

  it("the deliveries list updates live, reads with scripts off, and is reachable by keyboard", async () => {
    const page = await browserFor();
    await signInAs(page, "octo-admin");
    await page.goto(`${base}/console/deliveries`);
    stack.hub.control.pushFiles({ owner: "acme", repo: "web", files: { "CHANGELOG.md": "live\n" }, message: "live one" });
    await settle();
    const id = (await stack.steward.store.browse.browseDeliveries({ limit: 1, repository: "acme/web", event: "push" })).items[0]!.id;
    // Not reloaded: the server-sent events replace the table.
    await expect.poll(() => page.locator("#live").innerText(), BROWSER_WAIT).toContain(id);

    await page.goto(`${base}/console`);
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement?.textContent")).toBe("Deliveries");
    await page.keyboard.press("Enter");
    await page.waitForURL(`${base}/console/deliveries`);

    const noScript = await browserFor({ javaScriptEnabled: false });
    await signInAs(noScript, "octo-admin");
    await noScript.goto(`${base}/console/deliveries`);
    expect(await noScript.locator("main table").innerText()).toContain(id);
  });
});
