// A decision on the delivery's page, over real HTTP against the sandbox stack: a workflow run the
// rerun handler re-ran shows the explanation its check run gives (the rule and the log line that
// matched), from the handler's record of the decision, with links to the run, the pull request and
// the commit taken from the payload's own addresses (the hub's, as an Enterprise Server's would be).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";
import { signIn } from "./session.js";

let world: ConsoleWorld;

beforeAll(async () => {
  world = await consoleWorld();
}, 120_000);
afterAll(async () => {
  await world?.stack.close();
});

async function settled(): Promise<void> {
  const { control, domains } = world.stack.hub;
  for (let i = 0; i < 20; i++) {
    const before = control.deliveries().length;
    await world.settle();
    await domains.idle();
    if (control.deliveries().length === before) return;
  }
}

describe("a re-run decision on the delivery's page", { timeout: 120_000 }, () => {
  it("gives the rule and the log line that matched, as the check run does, and links out", async () => {
    const { control, domains } = world.stack.hub;
    control.pushFiles({
      owner: "acme",
      repo: "web",
      files: {
        ".github/steward.yml":
          "rerun:\n  enabled: true\n  rules:\n    - log: [ECONNRESET]\n  events: [push]\n  workflows: [Build]\n  max_attempts: 3\n",
      },
      message: "re-run on resets",
    });
    await settled();
    const sha = control.pushFiles({ owner: "acme", repo: "web", files: { "x.txt": "1\n" }, message: "x" }).sha;
    const run = domains.actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "Build",
      sha,
      jobs: [{ name: "unit" }],
    });
    domains.actions.failJob({ runId: run.id, job: "unit", log: "npm ERR! network read ECONNRESET while fetching" });
    await settled();
    // The policy's delay before a re-run passes on the hub's clock, which Steward runs by.
    control.advanceClock(5 * 60_000);
    await expect
      .poll(
        async () => {
          await settled();
          return domains.checks.checkRuns({ owner: "acme", repo: "web", sha, name: "steward/rerun" }).length;
        },
        { timeout: 60_000 },
      )
      .toBe(1);

    const delivery = (
      await world.stack.steward.store.browse.browseDeliveries({
        limit: 50,
        repository: "acme/web",
        event: "workflow_run",
      })
    ).items.find((d) => d.action === "completed");
    expect(delivery, "the completed run's delivery").toBeDefined();
    const [check] = domains.checks.checkRuns({ owner: "acme", repo: "web", sha, name: "steward/rerun" }) as {
      output: { title: string; summary: string };
    }[];
    expect(check?.output.summary).toContain("log matched ECONNRESET");

    const owner = await signIn(world.base, "octo-admin");
    const page = await owner.visit(`/console/deliveries/${delivery!.id}`);
    const explained = page.text.slice(page.text.indexOf('id="explanations"'));
    expect(page.text).toContain('id="explanations"');
    // The check run's title and its explanation: the action, the rule, the log pattern that matched.
    expect(explained).toContain(check!.output.title.replace(/&/g, "&#38;"));
    expect(explained).toMatch(/matched rule 1 \(.*log matched ECONNRESET\)/);
    expect(explained).toContain("<strong>Action:</strong>");
    // Rendered, not raw markdown.
    expect(explained).not.toMatch(/\*\*Action:\*\*|\|---\|/);
    expect(explained).toContain("<table>");

    // Links out, from the payload: the run and the commit on the hub's web address.
    expect(page.text).toMatch(
      new RegExp(`<a href="[^"]+/actions/runs/${run.id}[^"]*"[^>]*>workflow run Build, attempt 1</a>`),
    );
    expect(page.text).toContain(`/commit/${sha}"`);
  });

  it("a delivery no handler explains has no explanation section", async () => {
    const owner = await signIn(world.base, "octo-admin");
    const push = (await world.stack.steward.store.browse.browseDeliveries({ limit: 1, event: "push" })).items[0]!;
    const page = await owner.visit(`/console/deliveries/${push.id}`);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('id="explanations"');
    expect(page.text).toMatch(/>commit [0-9a-f]{7}<\/a>/);
  });
});
