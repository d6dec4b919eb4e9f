// Report-only mode for the checks and secrets handlers, end to end through the sandbox hub (which
// records every write): each decides and reports as it would, says what it would have done, and
// makes no acting write; switching the key to act is the only change needed for the next one.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import type { Steward } from "../../src/app.js";
import { checks } from "../../handlers/index.js";
import secrets from "../../handlers/secrets/index.js";
import { actingWrites } from "../support/acting-writes.js";
import { configRuns } from "./checks/config-stack.js";

const ORG = "acme";
const ADMIN = ".github";
const SECRETS_FILE = ".github/steward/secrets.yml";
const POLICY_FILE = ".github/steward.yml";
const VALUE = "report-mode-token-value";
/** A policy file with an unknown key: steward/config fails on it when it acts. */
const BROKEN = "rerun:\n  max_atempts: 3\n";

async function settle(stack: SandboxStack): Promise<void> {
  await stack.hub.control.settled();
  await (stack.steward as unknown as Steward).engine.idle();
}

function syncRun(stack: SandboxStack, sha: string) {
  const r = stack.hub.control.repo(ORG, ADMIN)!;
  return stack.hub.domains.checks.listForSha(r, sha, { check_name: "steward/sync" })[0];
}

/** Writes to secrets or variables, the acting writes of the secrets handler. */
function secretWrites(stack: SandboxStack, from = 0): string[] {
  return actingWrites(stack)
    .filter((w) => /\/(secrets|variables)\b/.test(w))
    .slice(from);
}

/** A pull request in acme/web whose policy file has one error. */
function openBroken(stack: SandboxStack) {
  return stack.hub.control.openPullRequest({
    owner: ORG,
    repo: "web",
    head: "typo",
    title: "Typo",
    files: { [POLICY_FILE]: BROKEN },
  });
}

async function auditOf(stack: SandboxStack, kind: string) {
  return (await (stack.steward as unknown as Steward).store.kv.auditLog({ kind })).map((e) => e.details);
}

const secretsPolicy = (top: string, entry = "") => `${top}
secrets:
  NPM_TOKEN:
    from: env:STEWARD_REPORT_TOKEN
    repositories: [api]${entry}
variables:
  REGION:
    value: eu-west-1
    repositories: [web]
`;

beforeAll(() => {
  process.env.STEWARD_REPORT_TOKEN = VALUE;
  process.env.STEWARD_SECRET_SOURCES = "acme=env:STEWARD_REPORT_";
});

describe("report-only mode by policy", () => {
  let stack: SandboxStack;
  beforeAll(async () => void (stack = await startSandboxStack({ handlers: [checks, secrets] })));
  afterAll(() => stack?.close());

  it("checks.mode: report concludes neutral where it would have failed, and blocks nothing; mode: act fails", async () => {
    stack.hub.control.pushFiles({ owner: ORG, repo: "web", files: { [POLICY_FILE]: "checks:\n  mode: report\n" } });
    await settle(stack);
    const writesBefore = actingWrites(stack, `/repos/${ORG}/web/`).length;
    const pr = openBroken(stack);
    await settle(stack);
    const [run] = configRuns(stack, ORG, "web", pr.head_sha);
    expect(run!.conclusion).toBe("neutral");
    expect(run!.output.title).toBe("Would have failed: 1 problem in 1 policy file (report only)");
    expect(run!.output.summary).toContain("**Report only** (checks.mode: report)");
    expect(run!.output.summary).toContain("This check would have concluded **failure**");
    // The problem is still shown on its line, as a warning that blocks nothing.
    expect(run!.annotations.map((a) => [a.start_line, a.annotation_level])).toEqual([[2, "warning"]]);
    expect(actingWrites(stack, `/repos/${ORG}/web/`).slice(writesBefore)).toEqual([]);

    // The switch: the key alone.
    stack.hub.control.pushFiles({ owner: ORG, repo: "web", files: { [POLICY_FILE]: "checks:\n  mode: act\n" } });
    await settle(stack);
    const next = stack.hub.control.pushToPullRequest({
      owner: ORG,
      repo: "web",
      number: pr.number,
      files: { [POLICY_FILE]: BROKEN + "  enabled: true\n" },
    });
    await settle(stack);
    const [acted] = configRuns(stack, ORG, "web", next.sha);
    expect(acted!.conclusion).toBe("failure");
    expect(acted!.output.title).toBe("1 problem in 1 policy file");
    expect(acted!.output.summary).not.toContain("Report only");
    expect(acted!.annotations.map((a) => a.annotation_level)).toEqual(["failure"]);
  });

  it("secrets.yml mode: report plans, records and reports the sync and writes no secret or variable; mode: act writes", async () => {
    const push = stack.hub.control.pushFiles({
      owner: ORG,
      repo: ADMIN,
      files: { [SECRETS_FILE]: secretsPolicy("mode: report") },
    });
    await settle(stack);
    expect(secretWrites(stack)).toEqual([]);
    expect(stack.hub.domains.secrets.openedValue({ owner: ORG, repo: "api" }, "NPM_TOKEN")).toBeUndefined();

    const run = syncRun(stack, push.sha);
    expect(run?.conclusion).toBe("neutral");
    expect(run?.output.title).toBe("Would have created 2, updated 0, deleted 0 (report only)");
    expect(run?.output.summary).toContain("### Report only: not written");
    expect(run?.output.summary).toContain(
      "| repo api | NPM_TOKEN | secret | would have created | missing | secrets.yml mode: report |",
    );
    expect(run?.output.summary).not.toContain(VALUE);
    // Recorded as the write would be, with what it would have done.
    expect(await auditOf(stack, "secret_report")).toEqual([
      expect.objectContaining({
        org: ORG,
        name: "NPM_TOKEN",
        action: "create",
        would: "would have created",
        reportOnly: "secrets.yml mode: report",
      }),
    ]);
    expect(await auditOf(stack, "secret_write")).toEqual([]);

    const acting = stack.hub.control.pushFiles({
      owner: ORG,
      repo: ADMIN,
      files: { [SECRETS_FILE]: secretsPolicy("mode: act") },
    });
    await settle(stack);
    expect(stack.hub.domains.secrets.openedValue({ owner: ORG, repo: "api" }, "NPM_TOKEN")).toBe(VALUE);
    const acted = syncRun(stack, acting.sha);
    expect(acted?.conclusion).toBe("success");
    expect(acted?.output.title).toBe("2 created, 0 updated, 0 deleted");
  });

  it("an entry's mode: report holds back its own writes only", async () => {
    const before = secretWrites(stack).length;
    process.env.STEWARD_REPORT_TOKEN = VALUE + "-rotated";
    try {
      const push = stack.hub.control.pushFiles({
        owner: ORG,
        repo: ADMIN,
        files: {
          [SECRETS_FILE]: secretsPolicy("", "\n    mode: report").replace("value: eu-west-1", "value: eu-north-1"),
        },
      });
      await settle(stack);
      // The variable acts, the rotated secret is reported only.
      expect(secretWrites(stack, before).map((w) => w.replace(/ \d+$/, ""))).toEqual([
        `PATCH /repos/${ORG}/web/actions/variables/REGION`,
      ]);
      expect(stack.hub.domains.secrets.openedValue({ owner: ORG, repo: "api" }, "NPM_TOKEN")).toBe(VALUE);
      const run = syncRun(stack, push.sha);
      expect(run?.conclusion).toBe("neutral");
      expect(run?.output.title).toBe(
        "0 created, 1 updated, 0 deleted; would have created 0, updated 1, deleted 0 (report only)",
      );
      expect(run?.output.summary).toContain(
        "| repo api | NPM_TOKEN | secret | would have updated | value changed in policy | secrets.yml secrets.NPM_TOKEN.mode: report |",
      );
    } finally {
      process.env.STEWARD_REPORT_TOKEN = VALUE;
    }
  });
});

describe("report-only mode by the operator (STEWARD_MODE=report)", () => {
  let stack: SandboxStack;
  beforeAll(
    async () =>
      void (stack = await startSandboxStack({ handlers: [checks, secrets], env: { STEWARD_MODE: "report" } })),
  );
  afterAll(() => stack?.close());

  it("reports over policies that act: neutral steward/config, no secret written", async () => {
    const pr = openBroken(stack);
    const push = stack.hub.control.pushFiles({
      owner: ORG,
      repo: ADMIN,
      files: { [SECRETS_FILE]: secretsPolicy("mode: act") },
    });
    await settle(stack);

    const [config] = configRuns(stack, ORG, "web", pr.head_sha);
    expect(config!.conclusion).toBe("neutral");
    expect(config!.output.summary).toContain("**Report only** (STEWARD_MODE=report)");

    // Minting an installation token is the only other write: none acts on a repository or organisation.
    expect(actingWrites(stack).filter((w) => !w.includes("/access_tokens"))).toEqual([]);
    const run = syncRun(stack, push.sha);
    expect(run?.output.title).toBe("Would have created 2, updated 0, deleted 0 (report only)");
    expect(run?.output.summary).toContain("| STEWARD_MODE=report |");
  });
});
