// The rerun check explains each decision with the rules that matched or did not; where those rules
// come from the private admin repository and the check is on a public repository, their globs and
// patterns are withheld (and the explanation says so), while a private repository's readers see them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxStack } from "../../../src/sandbox/stack.js";
import { ORG, rerunChecks, settle, startCi, startRerunStack } from "./stack.js";

let stack: SandboxStack;
beforeAll(async () => {
  stack = await startRerunStack();
  stack.hub.control.pushFiles({
    owner: ORG,
    repo: ".github",
    files: {
      ".github/steward.yml": `rerun:\n  enabled: true\n  delay: 0s\n  rules:\n    - jobs: ["${PRIVATE_BITS[0]}"]\n      log: ["/${PRIVATE_BITS[1]}/"]\n`,
    },
    message: "org policy",
  });
});
afterAll(() => stack?.close());

const PRIVATE_BITS = ["integration-7c1d*", "PRIVATE-PATTERN-7c1d"];

describe("rerun explanations and the private admin policy", () => {
  it("withholds the org's rule globs and patterns on a public repository, shows them on a private one", async () => {
    stack.hub.control.createRepo({ owner: ORG, name: "public-7c1d", files: { "README.md": "hi\n" } });
    stack.hub.control.createRepo({ owner: ORG, name: "private-7c1d", private: true, files: { "README.md": "hi\n" } });
    const runs = ["public-7c1d", "private-7c1d"].map((repo) => {
      const run = startCi(stack, repo);
      stack.hub.domains.actions.failJob({
        runId: run.id,
        job: "integration-db",
        step: "Test",
        log: "AssertionError: expected 2 to be 3",
      });
      return run;
    });
    await settle(stack);
    const [publicCheck, privateCheck] = runs.map((r) => rerunChecks(stack, r.head_sha)[0]!);
    const shown = JSON.stringify(publicCheck);
    for (const bit of PRIVATE_BITS) expect(shown).not.toContain(bit.replace("*", ""));
    expect(publicCheck.output.summary).toContain(
      "the rules' globs and patterns are withheld from this report: it merges the organisation's policy in acme/.github, and this repository is public and that one is private",
    );
    expect(publicCheck.output.summary).toContain("job name not in the rule's jobs");
    expect(privateCheck.output.summary).toContain(PRIVATE_BITS[0]);
    expect(privateCheck.output.summary).not.toContain("withheld");
  });

  it("withholds them from the first report after a private repository is made public, reading visibility without spending budget", async () => {
    stack.hub.control.createRepo({ owner: ORG, name: "turning-7c1d", private: true, files: { "README.md": "hi\n" } });
    const fail = () => {
      const run = startCi(stack, "turning-7c1d");
      stack.hub.domains.actions.failJob({ runId: run.id, job: "integration-db", step: "Test", log: "AssertionError" });
      return run;
    };
    const first = fail();
    await settle(stack);
    expect(rerunChecks(stack, first.head_sha)[0]!.output.summary).toContain(PRIVATE_BITS[0]);

    // The repository is made public; the very next report on it withholds the organisation's words,
    // also from the earlier decision on the same commit that the check run lists again.
    const before = stack.hub.control.requests().length;
    stack.hub.control.setRepoVisibility(ORG, "turning-7c1d", "public");
    const second = fail();
    await settle(stack);
    console.log(
      JSON.stringify(
        stack.hub.control
          .requests()
          .slice(before)
          .map((r) => [r.method, r.path, r.route, r.status]),
      ),
    );
    const shown = JSON.stringify(rerunChecks(stack, second.head_sha)[0]);
    for (const bit of PRIVATE_BITS) expect(shown).not.toContain(bit.replace("*", ""));
    expect(shown).toContain("this repository is public and that one is private");

    // Both repositories' visibility was asked again; the admin repository's had not changed,
    // so GitHub answered 304, which its rate limit does not count.
    const reads = stack.hub.control
      .requests()
      .slice(before)
      .filter((r) => r.method === "GET" && r.route === "/repos/{owner}/{repo}");
    expect(reads.find((r) => r.path === `/repos/${ORG}/.github`)?.status).toBe(304);
    expect(reads.find((r) => r.path === `/repos/${ORG}/turning-7c1d`)?.status).toBe(200);
  });
});
