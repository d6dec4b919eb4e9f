// The console's browser tests: Debian's Chromium driven by playwright-core, one fresh profile
// (its own --user-data-dir) per person, screenshots to a temp dir or, with
// STEWARD_SCREENSHOTS=docs, to docs/console/.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { expect } from "vitest";

const CHROMIUM = "/usr/bin/chromium";
export const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`browser tests skipped: no ${CHROMIUM} (.ci/run installs Debian's chromium)`);

// Pages change after navigation, a POST or a live event: expect.poll's 1 s default is too short on a loaded machine.
export const BROWSER_WAIT = { timeout: 30_000 };

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const toDocs = process.env.STEWARD_SCREENSHOTS === "docs";

export interface Browsers {
  /** A new person's browser: its own profile, closed and removed by `close()`. */
  open(opts?: { javaScriptEnabled?: boolean; width?: number }): Promise<Page>;
  /** A full-page screenshot named `<name>.png`. */
  shot(page: Page, name: string): Promise<void>;
  close(): Promise<void>;
}

export function browsers(): Browsers {
  const shotsDir = toDocs
    ? fileURLToPath(new URL("../../docs/console/", import.meta.url))
    : mkdtempSync(join(tmpdir(), "steward-shots-"));
  mkdirSync(shotsDir, { recursive: true });
  const profiles: string[] = [];
  const contexts: BrowserContext[] = [];
  return {
    async open(opts = {}) {
      const dir = mkdtempSync(join(tmpdir(), "steward-chromium-"));
      profiles.push(dir);
      const context = await chromium.launchPersistentContext(dir, {
        executablePath: CHROMIUM,
        headless: true,
        args: ARGS,
        viewport: { width: opts.width ?? 1280, height: 900 },
        ...(opts.javaScriptEnabled === false ? { javaScriptEnabled: false } : {}),
      });
      contexts.push(context);
      return context.pages()[0] ?? context.newPage();
    },
    async shot(page, name) {
      await page.screenshot({ path: join(shotsDir, `${name}.png`), fullPage: true });
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => undefined);
      for (const d of profiles) rmSync(d, { recursive: true, force: true });
      if (!toDocs) rmSync(shotsDir, { recursive: true, force: true });
    },
  };
}

/** Signs in through the sandbox hub's OAuth pages as `login`, and waits for the console to say so. */
export async function signInAs(page: Page, base: string, login: string): Promise<void> {
  await page.goto(`${base}/console`);
  await page.getByRole("link", { name: "Sign in with GitHub" }).click();
  await page.getByRole("link", { name: `Sign in as ${login}` }).click();
  await page.waitForURL(`${base}/console`);
  await expect.poll(() => page.locator("header").innerText(), BROWSER_WAIT).toContain(`Signed in as ${login}`);
}
