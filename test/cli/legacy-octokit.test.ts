// Octokit 15/16 method names are refused when a hosted app loads, naming the file, the line, the
// old call and its replacement: `steward run` of an app whose local module calls
// `context.github.pullRequests.createComment` does not start. The table of old names holds to the
// supplied Octokit; comments and strings are not calls; the published apps the compatibility tests
// host pass, and probot-stale 1.1.0 (a Probot 7 app) is refused by its calls.
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { startChild } from "../service/child.js";
import { isCurrentMethod, LEGACY_METHODS, legacyCalls, legacyCallsIn } from "../../src/modules/legacy-octokit.js";

const APP = join(import.meta.dirname, "fixtures", "octokit16-app", "index.js");
const HELPER = join(import.meta.dirname, "fixtures", "octokit16-app", "lib", "thank.js");
const modules = resolve(import.meta.dirname, "../../node_modules");

describe("Octokit 15/16 names at load", () => {
  it("steward run refuses the app, naming the file, line, call and replacement", async () => {
    const run = startChild({ PORT: "0", STEWARD_SANDBOX_PORT: "0", LOG_LEVEL: "info" }, ["run", APP]);
    expect(await run.exited).toBe(1);
    const out = run.out();
    expect(out).toContain("hosted code calls Octokit methods that no longer exist");
    expect(out).toContain(
      "test/cli/fixtures/octokit16-app/lib/thank.js:3: github.pullRequests.createComment: use github.pulls.createReviewComment",
    );
    expect(out).not.toContain("running against the SANDBOX hub");
  }, 120_000);

  it("every old name is gone from the supplied Octokit and every replacement is one of its methods", () => {
    for (const [old, now] of Object.entries(LEGACY_METHODS)) {
      expect(isCurrentMethod(old), old).toBe(false);
      expect(isCurrentMethod(now), now).toBe(true);
    }
  });

  it("reads calls, not comments or strings; a `number` parameter is named where the method takes issue_number", () => {
    const source = [
      "// context.github.pullRequests.get(context.issue())",
      "/* octokit.issues.getComments() */",
      'log("github.issues.edit is gone");',
      "await context.octokit.rest.issues.get({ owner, repo, number: 1 });",
      "await context.octokit.issues.get({ owner, repo, issue_number: 1 });",
      "await octokit.paginate(octokit.issues.getComments, {});",
      "const re = /github.issues.edit/;",
      "await context.github.config.get(); context.octokit.request('GET /')",
    ].join("\n");
    expect(legacyCallsIn("app.js", source)).toEqual([
      {
        file: "app.js",
        line: 4,
        call: "octokit.rest.issues.get({ number })",
        replacement: "pass issue_number instead of number",
      },
      { file: "app.js", line: 6, call: "octokit.issues.getComments", replacement: "use octokit.issues.listComments" },
    ]);
  });

  it("the published apps the compatibility tests host pass; probot-stale 1.1.0 is refused by its own calls", () => {
    expect(legacyCalls(join(modules, "release-drafter-github-app", "index.js"))).toEqual([]);
    expect(legacyCalls(join(modules, "delete-merged-branch", "index.js"))).toEqual([]);
    expect(legacyCalls(join(modules, "probot-commands", "index.js"))).toEqual([]);
    expect(legacyCalls(join(modules, "probot-metadata", "index.js"))).toEqual([]);
    const stale = legacyCalls(join(modules, "probot-stale", "index.js"));
    expect(stale.map((c) => `${c.file.slice(modules.length + 1)}:${c.line}: ${c.call}`)).toEqual(
      expect.arrayContaining([
        "probot-stale/lib/stale.js:52: github.search.issues",
        "probot-stale/lib/stale.js:77: github.issues.edit",
        "probot-stale/lib/stale.js:61: github.issues.addLabels({ number })",
      ]),
    );
    // Its dependencies (probot-scheduler calls apps.getInstallations) are not read.
    expect(stale.every((c) => c.file.includes("/probot-stale/"))).toBe(true);
    expect(legacyCalls(APP)).toEqual([
      {
        file: HELPER,
        line: 3,
        call: "github.pullRequests.createComment",
        replacement: "use github.pulls.createReviewComment",
      },
    ]);
  });
});
