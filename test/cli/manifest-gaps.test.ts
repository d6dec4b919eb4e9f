// `steward start` in production warns, at start, about a hosted app whose own app.yml subscribes
// to events Steward's app.yml lacks: GitHub would never send them to an app registered without
// them, so the app's listeners would stay silent with nothing in the log saying why.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { manifestGaps } from "../../src/cli/commands/start.js";
import { realAppEnv, startChild } from "../service/child.js";
import { perTest } from "../service/per-test.js";

const scope = perTest();

/** A Probot app in a package of its own whose app.yml subscribes to `events`. */
async function app(dir: string, name: string, events: string[]): Promise<string> {
  await mkdir(join(dir, name), { recursive: true });
  await writeFile(join(dir, name, "package.json"), JSON.stringify({ name }));
  await writeFile(join(dir, name, "app.yml"), ["default_events:", ...events.map((e) => `  - ${e}`), ""].join("\n"));
  const entry = join(dir, name, "index.cjs");
  await writeFile(entry, "module.exports = (app) => { app.on('issues.opened', async () => {}); };\n");
  return entry;
}

describe("a hosted app subscribed to events Steward's manifest lacks", () => {
  it("finds the events of each app's app.yml that Steward's app.yml has not", async () => {
    const dir = await scope.dataDir("gaps");
    const greeter = await app(dir, "greeter", ["issues", "issue_comment", "pull_request"]);
    const fits = await app(dir, "fits", ["pull_request", "push"]);
    expect(manifestGaps([greeter, fits])).toEqual([
      { path: greeter, file: join(dir, "greeter", "app.yml"), events: ["issues", "issue_comment"] },
    ]);
  });

  it("steward start (APP_ID set) warns once at start, naming the app, the events and the remedy", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("gaps-start");
    const greeter = await app(dir, "greeter", ["issues", "issue_comment", "pull_request"]);
    const run = scope.stopAfter(
      startChild({
        ...(await realAppEnv(hub, dir, hub.env.WEBHOOK_SECRET)),
        NODE_ENV: "production",
        STEWARD_HANDLERS: greeter,
        LOG_LEVEL: "info",
        STEWARD_SHUTDOWN_TIMEOUT: "5s",
      }),
      (r) => r.proc.exitCode === null && r.proc.kill("SIGKILL"),
    );
    await run.listening;
    const warnings = run
      .out()
      .split("\n")
      .filter((l) => l.includes("which Steward's app.yml does not"));
    expect(warnings).toHaveLength(1);
    const line = JSON.parse(warnings[0]!) as { level: number; msg: string; events: string[] };
    expect(line.level).toBe(40);
    expect(line.events).toEqual(["issues", "issue_comment"]);
    expect(line.msg).toContain(`hosted app ${greeter} subscribes to issues, issue_comment`);
    expect(line.msg).toContain(`steward register ${greeter}`);
    run.proc.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  }, 120_000);
});
