// A required check is judged by who ran it: in the sandbox hub, a second GitHub App with
// `checks: write` creates a successful check run named `ci` on a commit where the real CI (GitHub
// Actions) never ran. A plain `checks: [ci]` trusts the name and approves; `{ name: ci, app:
// github-actions }` holds the deployment and says whose run it waits for and whose it ignored.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createWorld, ORG, REPO, type World } from "./world.js";
import { Octokit } from "@octokit/core";

let w: World;
beforeEach(async () => {
  w = await createWorld();
});
afterEach(async () => {
  await w.close();
});

const policy = (checks: string) => `deployments:
  environments:
    production:
      checks: ${checks}
`;

describe("deployment checks pinned to an app, in the sandbox hub", { timeout: 180_000 }, () => {
  it("a same-named check run from another app approves an unpinned rule but not one pinned to github-actions", async () => {
    const other = w.stack.hub.control.installOtherApp(ORG, { slug: "other-ci" });
    const impostor = new Octokit({ auth: other.token, baseUrl: w.stack.hub.url });
    const fakeCi = async (sha: string) => {
      const made = await impostor.request("POST /repos/{owner}/{repo}/check-runs", {
        owner: ORG,
        repo: REPO,
        name: "ci",
        head_sha: sha,
        conclusion: "success",
      });
      expect(made.data.app?.slug).toBe("other-ci");
    };
    const answers = (run: number) =>
      [
        ...w.effects("protection_rule.approved"),
        ...w.effects("protection_rule.rejected"),
        ...w.effects("protection_rule.status_report"),
      ].filter((e) => e.detail.run_id === run);
    w.environment("production", { rule: true });

    // Trusting the name (what every `checks:` entry did before): approved on the impostor's run.
    const unpinnedSha = w.pushPolicy(policy("[ci]"));
    await fakeCi(unpinnedSha);
    const trusted = w.startDeploy({ sha: unpinnedSha, jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => answers(trusted).length > 0, "the unpinned answer");
    expect(answers(trusted).map((e) => e.kind)).toEqual(["deployments.protection_rule.approved"]);
    expect(answers(trusted)[0]!.detail.comment).toMatch(/check `ci` succeeded on [0-9a-f]{7}/);

    // Pinned to GitHub Actions: the same run does not count, and the answer names both apps.
    const pinnedSha = w.pushPolicy(policy("[{ name: ci, app: github-actions }]"));
    await fakeCi(pinnedSha);
    const held = w.startDeploy({ sha: pinnedSha, jobs: [{ name: "deploy", environment: "production" }] });
    await w.until(() => answers(held).length > 0, "the pinned answer");
    const [report] = answers(held);
    expect(report!.kind).toBe("deployments.protection_rule.status_report");
    expect(report!.detail.comment).toMatch(
      /check `ci` has not started on [0-9a-f]{7} from github-actions \(a run of that name from `other-ci` is not counted\)/,
    );
    await w.settle();
    expect(w.effects("protection_rule.approved").filter((e) => e.detail.run_id === held)).toEqual([]);
  });
});
