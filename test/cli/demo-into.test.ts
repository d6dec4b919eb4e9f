// `steward demo --into URL` plays into a sandbox already running in another process: a
// `steward start` with no APP_ID, then the demo pointed at the control surface its banner prints.
// The deliveries it made are in that process's store (`steward deliveries list` on its data
// directory, as the console shows them), the steward/config check ran there, Steward's re-runs
// and deployment decisions reached that hub, and the secrets scenario, which needs Steward's own
// process (the secret sources are in its environment), is named as not played.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startChild } from "../service/child.js";
import { sandboxChildren } from "./sandbox-child.js";

const children = sandboxChildren();

describe("steward demo --into", () => {
  it("plays the control-surface scenarios into a running sandbox, whose store records the deliveries", async () => {
    const dir = await children.tempDir("steward-demo-into-");
    const sandbox = await children.start(["start"], dir);
    const control = /control surface: (http:\/\/\S+\/_sandbox\/)/.exec(sandbox.out())![1]!;

    const demo = startChild({}, ["demo", "--into", control]);
    const code = await demo.exited;
    const out = demo.out();
    expect(code, out).toBe(0);
    expect(out).toContain(`playing into the running sandbox: hub ${sandbox.hub}`);
    expect(out).toContain("deliveries flow from the hub to Steward");
    expect(out).toMatch(/push main [0-9a-f]{7}\s*\|\s*push\s*\|\s*202/);
    expect(out).toContain("failure: 2 problems in 1 policy file");
    expect(out).toContain("success: Policy valid: 1 file checked");
    // The rerun scenario played there: Steward's re-run requests reached that hub, explained on the check run.
    expect(out).toContain("transient CI failures are re-run, real ones are not");
    expect(out).toMatch(/Steward on attempt 1\s*\|\s*rerun\s*\|\s*run \d+ attempt 1: re-ran the failed jobs/);
    expect(out).toMatch(/attempt 2: success \(mode job\)/);
    expect(out).toContain("neutral: Re-ran E2E attempt 1: flake (failed between passing commits)");
    expect(out).not.toMatch(/not played into a running sandbox .*transient CI failures/);
    // And the deployments one: Steward, the protection rule there, held a deployment through a freeze
    // the hub's clock then passed, and approved it.
    expect(out).toContain("deployments held, approved and rejected by policy");
    expect(out).toMatch(/deploy main during the freeze\s*\|[^|]*\|\s*waiting: /);
    expect(out).toMatch(/freeze over at \S+\s*\|\s*scheduled re-evaluation\s*\|\s*approved: /);
    expect(out).not.toMatch(/not played into a running sandbox .*deployments held/);
    expect(out).toMatch(/not played into a running sandbox .*secrets and variables synced/);

    // The sandbox process recorded them: its own store, read as an operator would while it runs.
    const list = startChild({ STEWARD_DATA_DIR: join(dir, "data") }, ["deliveries", "list", "--limit", "100"]);
    expect(await list.exited).toBe(0);
    for (const event of ["push", "pull_request", "workflow_run", "check_run"]) expect(list.out()).toContain(event);

    sandbox.proc.kill("SIGTERM");
    expect(await sandbox.exited).toBe(0);
  }, 240_000);

  it("refuses a URL where no sandbox answers, saying so", async () => {
    const demo = startChild({}, ["demo", "--into", "http://127.0.0.1:9/_sandbox/"]);
    expect(await demo.exited).toBe(1);
    expect(demo.out()).toContain("no sandbox hub's control surface answers at http://127.0.0.1:9/_sandbox/");
  }, 60_000);
});
