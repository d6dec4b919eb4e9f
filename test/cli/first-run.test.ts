// A first run without APP_ID (`steward run ./app.js`): without a terminal to ask at it runs in the
// sandbox and says so, naming the command that registers instead; with --register it registers the
// app from its own app.yml through GitHub's manifest flow (the sandbox hub standing in for GitHub,
// the page followed over HTTP as a browser would), writes .env, says so, and starts as that app.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { BIN, startChild } from "../service/child.js";
import { perTest } from "../service/per-test.js";
import { freePort, until } from "../lifecycle/support.js";
import { browse } from "./registration-page.js";
import { loadDotEnv } from "../../src/cli/dotenv.js";

const scope = perTest();

/** A Probot app in a package of its own: app.yml asks for issues; package.json gives name and homepage. */
async function appPackage(root: string): Promise<string> {
  await mkdir(root, { recursive: true });
  await writeFile(
    join(root, "package.json"),
    JSON.stringify({ name: "issue-greeter", version: "1.0.0", homepage: "https://example.com/issue-greeter" }),
  );
  await writeFile(
    join(root, "app.yml"),
    ["default_events:", "  - issues", "default_permissions:", "  issues: write", ""].join("\n"),
  );
  const entry = join(root, "index.js");
  await writeFile(entry, "module.exports = (app) => { app.on('issues.opened', async () => {}); };\n");
  return entry;
}

describe("a first run without APP_ID", () => {
  it("without a terminal: runs in the sandbox, saying so and how to register instead", async () => {
    const dir = await scope.dataDir("first-run-sandbox");
    const entry = await appPackage(join(dir, "greeter"));
    const run = scope.stopAfter(
      startChild({ PORT: "0", STEWARD_DATA_DIR: join(dir, "data"), STEWARD_SHUTDOWN_TIMEOUT: "2s" }, ["run", entry]),
      (r) => r.proc.exitCode === null && r.proc.kill("SIGKILL"),
    );
    await until(() => run.out().includes("(202: recorded"), "the banner", run.out);
    expect(run.out()).toContain("no APP_ID is set, so this runs in the SANDBOX (no terminal to ask at), not on GitHub");
    expect(run.out()).toContain(`To register ${entry} as a GitHub App instead`);
    expect(run.out()).toContain(`steward run --register ${entry}`);
    run.proc.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  }, 120_000);

  it("--register: registers the app from its own app.yml, writes .env, and starts as that app", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("first-run-register");
    const entry = await appPackage(join(dir, "greeter"));
    const port = await freePort();
    const run = scope.stopAfter(
      startChild(
        {
          PORT: String(port),
          HOST: "127.0.0.1",
          GITHUB_URL: hub.url,
          GITHUB_API_URL: hub.url,
          STEWARD_DATA_DIR: join(dir, "data"),
          STEWARD_SHUTDOWN_TIMEOUT: "2s",
          LOG_LEVEL: "info",
        },
        ["run", "--register", entry],
        { cwd: dir },
      ),
      (r) => r.proc.exitCode === null && r.proc.kill("SIGKILL"),
    );
    await until(() => run.out().includes(`Open http://127.0.0.1:${port}/`), "the registration page", run.out);
    expect(run.out()).toContain(`no APP_ID is set, so ${entry} is registered as a GitHub App first`);

    const { manifest } = await browse({ url: `http://127.0.0.1:${port}/` });
    // The app's own app.yml, its name and url from its package.json; no built-in handler's needs.
    expect(manifest).toMatchObject({ name: "issue-greeter", url: "https://example.com/issue-greeter" });
    expect(manifest.default_events).toEqual(expect.arrayContaining(["issues"]));
    expect(manifest.default_permissions).toMatchObject({ issues: "write" });
    expect(manifest.default_permissions).not.toHaveProperty("actions");

    const listening = await run.listening;
    expect(listening).toBe(`http://127.0.0.1:${port}`);
    const env: NodeJS.ProcessEnv = {};
    loadDotEnv(env, dir);
    expect(env.APP_ID).toMatch(/^\d+$/);
    expect(run.out()).toContain(`steward: registered; starting as that GitHub App (APP_ID ${env.APP_ID} from .env)`);
    expect(run.out()).not.toContain("SANDBOX");
    for (const secret of [env.WEBHOOK_SECRET!, env.PRIVATE_KEY!.split("\n")[1]!])
      expect(run.out()).not.toContain(secret);
    expect(await readFile(join(dir, ".env"), "utf8")).toContain("GITHUB_API_URL=");
    run.proc.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  }, 180_000);
});

describe("a first run without APP_ID at a terminal", () => {
  it("asks whether to register or run in the sandbox, and does what the answer says", async () => {
    const dir = await scope.dataDir("first-run-ask");
    const entry = await appPackage(join(dir, "greeter"));
    // `script` gives the CLI a terminal (a pseudo-terminal) for stdin and stderr, as a person's shell does.
    const command = [process.execPath, BIN, "run", entry].map((a) => `'${a}'`).join(" ");
    const proc = spawn("script", ["-qfec", command, "/dev/null"], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        PORT: "0",
        STEWARD_DATA_DIR: join(dir, "data"),
        STEWARD_SHUTDOWN_TIMEOUT: "2s",
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    scope.stopAfter(proc, (p) => p.exitCode === null && p.kill("SIGKILL"));
    let out = "";
    proc.stdout.on("data", (d) => (out += d.toString()));
    proc.stderr.on("data", (d) => (out += d.toString()));
    const exited = new Promise((resolve) => proc.on("close", resolve));
    await until(
      () => out.includes("Register or sandbox? [r/S]"),
      "the question",
      () => out,
    );
    expect(out).toContain(`r  register ${entry} on https://github.com now`);
    proc.stdin.write("s\n");
    await until(
      () => out.includes("(202: recorded"),
      "the sandbox banner",
      () => out,
    );
    expect(out).toContain("no APP_ID is set, so this runs in the SANDBOX (chosen at the prompt), not on GitHub");
    // Ctrl-C at the terminal: the service stops as on SIGINT.
    proc.stdin.write("\x03");
    await exited;
  }, 120_000);
});
