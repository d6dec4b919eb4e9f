// The secrets handler end to end: the sandbox hub delivers webhooks to a running Steward,
// which syncs and reports check runs. The admin repository of the stack is `acme/.github`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import type { Steward } from "../../../src/app.js";
import secrets from "../../../handlers/secrets/index.js";
import { examples as webhookExamples } from "../../support/webhook-examples.js";

const ORG = "acme";
const ADMIN = ".github";
const POLICY = ".github/steward/secrets.yml";
const VALUE = "e2e-npm-token-value";

let stack: SandboxStack;

async function settle(): Promise<void> {
  // Deliveries attempted, then Steward's queue drained (a sync may queue nothing further).
  await stack.hub.control.settled();
  await (stack.steward as unknown as Steward).engine.idle();
}

function checkRun(repo: string, sha: string, name: string) {
  const r = stack.hub.control.repo(ORG, repo)!;
  return stack.hub.domains.checks.listForSha(r, sha, { check_name: name })[0];
}

const policy = (extra = "") => `
secrets:
  NPM_TOKEN:
    from: env:STEWARD_E2E_NPM_TOKEN
    org: { visibility: selected, repositories: ["web", "new-*"] }
  API_TOKEN:
    from: env:STEWARD_E2E_NPM_TOKEN
    repositories: ["api", "new-*"]
${extra}
prune: true
`;

beforeAll(async () => {
  process.env.STEWARD_E2E_NPM_TOKEN = VALUE;
  process.env.STEWARD_SECRET_SOURCES = "acme=env:STEWARD_E2E_";
  stack = await startSandboxStack({ handlers: [secrets] });
});
afterAll(async () => {
  await stack?.close();
});

describe("secrets handler through the sandbox stack", () => {
  it("a policy push syncs and reports steward/sync on the commit; an unrelated push does nothing", async () => {
    const push = stack.hub.control.pushFiles({
      owner: ORG,
      repo: ADMIN,
      files: { [POLICY]: policy() },
      message: "secrets policy",
    });
    await settle();
    const s = stack.hub.domains.secrets;
    expect(s.openedValue({ org: ORG }, "NPM_TOKEN")).toBe(VALUE);
    expect(s.openedValue({ owner: ORG, repo: "api" }, "API_TOKEN")).toBe(VALUE);
    const run = checkRun(ADMIN, push.sha, "steward/sync");
    expect(run?.conclusion).toBe("success");
    expect(run?.output.title).toBe("2 created, 0 updated, 0 deleted");
    expect(run?.output.summary).toContain("| org | NPM_TOKEN | secret | create | missing |");
    expect(run?.output.summary).not.toContain(VALUE);

    const mark = stack.hub.control.requests().length;
    const other = stack.hub.control.pushFiles({
      owner: ORG,
      repo: ADMIN,
      files: { "README.md": "# admin\n" },
      message: "docs",
    });
    await settle();
    expect(checkRun(ADMIN, other.sha, "steward/sync")).toBeUndefined();
    expect(
      stack.hub.control
        .requests()
        .slice(mark)
        .filter((r) => /\/(secrets|variables)/.test(r.path)),
    ).toEqual([]);
  });

  it("a pull request changing the policy gets steward/plan and nothing is applied", async () => {
    const before = stack.hub.control.requests().length;
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: ADMIN,
      head: "drop-api-token",
      title: "Drop API_TOKEN, add a variable",
      files: {
        [POLICY]: policy("variables:\n  REGION: { value: eu-west-1, org: { visibility: all } }").replace(
          /  API_TOKEN:[\s\S]*?new-\*"\]\n/,
          "",
        ),
      },
    });
    await settle();
    const run = checkRun(ADMIN, pr.head_sha, "steward/plan");
    expect(run?.conclusion).toBe("success");
    expect(run?.output.title).toBe("1 to create, 0 to update, 1 to delete, 1 unchanged");
    expect(run?.output.summary).toContain(
      "| repo api | API_TOKEN | secret | delete | no longer in policy; created by Steward |",
    );
    expect(run?.output.summary).toContain("| org | REGION | variable | create | missing |");
    expect(run?.output.summary).toContain("Nothing has been applied");
    const writes = stack.hub.control
      .requests()
      .slice(before)
      .filter((r) => r.method !== "GET" && /secrets|variables/.test(r.path));
    expect(writes).toEqual([]);
    expect(stack.hub.domains.secrets.openedValue({ owner: ORG, repo: "api" }, "API_TOKEN")).toBe(VALUE);
  });

  it("a pull request with an invalid policy gets a failing plan naming the problem, never the value", async () => {
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: ADMIN,
      head: "literal",
      title: "Oops",
      files: { [POLICY]: "secrets:\n  LEAKED: { value: hunter2-literal, repositories: [api] }\n" },
    });
    await settle();
    const run = checkRun(ADMIN, pr.head_sha, "steward/plan");
    expect(run?.conclusion).toBe("failure");
    expect(run?.output.summary).toMatch(/literal value/);
    expect(run?.output.summary).not.toContain("hunter2-literal");
  });

  it("a plan whose text says writes will fail concludes failure and says so in its title", async () => {
    // Over GitHub's 48 KB per secret: the plan's own limits section says its write will fail.
    process.env.STEWARD_E2E_BIG = "b".repeat(49 * 1024);
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: ADMIN,
      head: "big-secret",
      title: "Add a big secret",
      files: { [POLICY]: policy("  BIG_TOKEN:\n    from: env:STEWARD_E2E_BIG\n    repositories: [api]") },
    });
    await settle();
    const run = checkRun(ADMIN, pr.head_sha, "steward/plan");
    expect(run?.output.summary).toContain(
      "secret BIG_TOKEN in repo api is 49.0 KB, over GitHub's limit of 48 KB per secret: its write will fail",
    );
    expect(run?.conclusion).toBe("failure");
    expect(run?.output.title).toMatch(/ to create, .* unchanged; writes would fail: over GitHub's limits$/);
    expect(run?.output.summary).toContain(":x: Applying it would fail in part");
    expect(run?.output.summary).not.toContain(process.env.STEWARD_E2E_BIG);
  });

  it("a secret someone else created is left alone, reported as such, and does not fail steward/sync or steward/plan", async () => {
    stack.hub.domains.secrets.setSecretOutOfBand({ owner: ORG, repo: "api" }, "HUMAN_KEY", "a person's value");
    const extra = "  HUMAN_KEY:\n    from: env:STEWARD_E2E_NPM_TOKEN\n    repositories: [api]";
    const pr = stack.hub.control.openPullRequest({
      owner: ORG,
      repo: ADMIN,
      head: "human-key",
      title: "Manage HUMAN_KEY",
      files: { [POLICY]: policy(extra) },
    });
    await settle();
    const plan = checkRun(ADMIN, pr.head_sha, "steward/plan");
    expect(plan?.conclusion).toBe("success");
    expect(plan?.output.title).toBe("0 to create, 0 to update, 0 to delete, 3 unchanged; 1 left alone");
    expect(plan?.output.summary).toContain("### Left alone (not Steward's)");
    expect(plan?.output.summary).not.toContain("### Could not plan");

    const push = stack.hub.control.pushFiles({
      owner: ORG,
      repo: ADMIN,
      files: { [POLICY]: policy(extra) },
      message: "manage HUMAN_KEY",
    });
    await settle();
    const run = checkRun(ADMIN, push.sha, "steward/sync");
    expect(run?.conclusion).toBe("success");
    expect(run?.output.title).toBe("0 created, 0 updated, 0 deleted, 1 left alone");
    expect(run?.output.summary).not.toContain("### Failed");
    expect(run?.output.summary).toContain(
      "### Left alone (not Steward's)\n\nThis target exists but Steward did not create it, and the policy does not say `adopt: true`: it was left as it is, as documented. This is not a failure.",
    );
    expect(run?.output.summary).toContain(
      "| repo api | HUMAN_KEY | secret | exists and Steward did not create it, so it is left as it is",
    );
    expect(stack.hub.domains.secrets.openedValue({ owner: ORG, repo: "api" }, "HUMAN_KEY")).toBe("a person's value");
  });

  it("a repository created later gets its secrets", async () => {
    const repo = stack.hub.control.createRepo({ owner: ORG, name: "new-service" });
    const inst = stack.hub.control.installation(ORG)!;
    await stack.hub.hub.deliver(
      "repository",
      {
        action: "created",
        repository: stack.hub.hub.repoJson(repo),
        organization: { login: ORG },
        sender: stack.hub.hub.userJson("octo-admin"),
        installation: { id: inst.id },
      },
      { installationId: inst.id },
    );
    await settle();
    expect(stack.hub.domains.secrets.openedValue({ owner: ORG, repo: "new-service" }, "API_TOKEN")).toBe(VALUE);
    expect(stack.hub.domains.secrets.get({ kind: "org", org: ORG }, "NPM_TOKEN")!.selected).toContain(repo.id);
  });

  it("repositories added to the installation get their secrets", async () => {
    const repo = stack.hub.control.createRepo({ owner: ORG, name: "new-worker" });
    const inst = stack.hub.control.installation(ORG)!;
    await stack.hub.hub.deliver(
      "installation_repositories",
      {
        action: "added",
        installation: { id: inst.id, account: { login: ORG } },
        repository_selection: "selected",
        repositories_added: [{ id: repo.id, name: repo.name, full_name: `${ORG}/${repo.name}`, private: false }],
        repositories_removed: [],
        sender: stack.hub.hub.userJson("octo-admin"),
      },
      { installationId: inst.id },
    );
    await settle();
    expect(stack.hub.domains.secrets.openedValue({ owner: ORG, repo: "new-worker" }, "API_TOKEN")).toBe(VALUE);
  });

  it("a rate limit outlasting the wait ends the sync early and schedules its resumption at the reset", async () => {
    const inst = stack.hub.control.installation(ORG)!;
    const resetAt = new Date(stack.hub.control.now().getTime() + 3_600_000);
    // Enough for the policy read and the repository list, not for the scopes.
    stack.hub.control.setRateLimit(inst.id, { limit: 5000, remaining: 2, resetAt });
    try {
      stack.hub.control.pushFiles({
        owner: ORG,
        repo: ADMIN,
        files: { [POLICY]: policy("variables:\n  LATER: { value: x, repositories: [api] }") },
        message: "more",
      });
      await settle();
      const tasks = (await (stack.steward as unknown as Steward).store.tasks.listTasks()).filter(
        (t) => t.handler === "secrets" && t.key === `secrets/resume/${inst.id}/${ORG}`,
      );
      expect(tasks).toHaveLength(1);
      expect(Math.abs(tasks[0]!.runAt.getTime() - resetAt.getTime())).toBeLessThan(10_000);
      expect(tasks[0]!.data).toEqual({ kind: "resume", org: ORG });
      expect(stack.hub.domains.variables.valueIn({ owner: ORG, repo: "api" }, "LATER")).toBeUndefined();
    } finally {
      stack.hub.control.setRateLimit(inst.id, { limit: 5000, remaining: 5000 });
    }
  });
});

describe("secrets handler: deliveries that are not triggers", () => {
  it("takes only the pull request actions that can change a plan: the others are recorded done at the intake and never run", async () => {
    const store = (stack.steward as unknown as Steward).store;
    const repo = stack.hub.control.repo(ORG, ADMIN)!;
    const example = (action: string) => {
      const found = (webhookExamples as unknown as { name: string; examples: Record<string, any>[] }[])
        .find((g) => g.name === "pull_request")!
        .examples.find((e) => e.action === action);
      if (!found) throw new Error(`no pull_request.${action} example`);
      return {
        ...structuredClone(found),
        repository: {
          ...found.repository,
          id: repo.id,
          name: ADMIN,
          full_name: `${ORG}/${ADMIN}`,
          owner: { ...found.repository.owner, login: ORG },
        },
      };
    };
    const sent = new Map<string, string>();
    for (const action of [
      "labeled",
      "closed",
      "assigned",
      "review_requested",
      "converted_to_draft",
      "ready_for_review",
      "opened",
    ]) {
      const record = await stack.hub.state.deliver("pull_request", example(action));
      expect(record?.status_code, action).toBe(202);
      sent.set(action, record!.guid);
    }
    await settle();
    for (const [action, id] of sent) {
      const got = await store.deliveries.getDelivery(id);
      expect(got?.delivery.status, action).toBe("done");
      if (action === "opened") {
        // Taken and run (what the handler made of it is the other tests' business).
        expect(got?.delivery.attempts).toBe(1);
        expect(got?.outcomes.map((o) => o.handler)).toEqual(["secrets"]);
      } else {
        expect(got?.delivery.attempts, action).toBe(0);
        expect(got?.outcomes, action).toEqual([]);
      }
    }
    for (const action of ["opened", "synchronize", "reopened", "edited"])
      expect(secrets.events).toContain(`pull_request.${action}`);
    expect(secrets.events).not.toContain("pull_request");
  });

  it("takes a push only in the admin repository: one elsewhere is recorded done at the intake and never run", async () => {
    const store = (stack.steward as unknown as Steward).store;
    const before = stack.hub.control.deliveries().length;
    stack.hub.control.pushFiles({ owner: ORG, repo: "api", files: { "README.md": "elsewhere" }, message: "elsewhere" });
    stack.hub.control.pushFiles({ owner: ORG, repo: ADMIN, files: { "README.md": "admin" }, message: "admin" });
    await settle();
    const pushes = stack.hub.control
      .deliveries()
      .slice(before)
      .filter((d) => d.event === "push");
    expect(pushes.map((d) => (d.request.payload.repository as { name: string }).name)).toEqual(["api", ADMIN]);
    const [elsewhere, admin] = await Promise.all(pushes.map((d) => store.deliveries.getDelivery(d.guid)));
    expect(elsewhere?.delivery).toMatchObject({ status: "done", attempts: 0 });
    expect(elsewhere?.outcomes).toEqual([]);
    // In the admin repository the push runs (and is skipped: it does not touch the secrets document).
    expect(admin?.delivery).toMatchObject({ status: "done", attempts: 1 });
    expect(admin?.outcomes.map((o) => [o.handler, o.status])).toEqual([["secrets", "skipped"]]);
  });

  it("skips an action it does not act on without reading the payload (the engine parses it only when read)", async () => {
    for (const [name, action] of [
      ["pull_request", "labeled"],
      ["pull_request", "closed"],
      ["repository", "archived"],
      ["installation", "deleted"],
    ] as const) {
      const ctx = {
        name,
        action,
        deliveryId: "not-a-trigger",
        get payload(): never {
          throw new Error("payload read");
        },
        config: { adminRepo: ADMIN },
      };
      const out = await secrets.handle(ctx as unknown as Parameters<typeof secrets.handle>[0]);
      expect(out).toEqual({ status: "skipped", reason: `${name}.${action} is not a secrets trigger` });
    }
  });
});
