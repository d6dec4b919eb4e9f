// Deployments gated by policy: Steward is a custom protection rule on acme/web's production
// environment. A deployment from main with green checks is approved, one from a feature branch
// rejected, and one during a freeze held until the freeze ends, then approved. Then the
// organisation gates production of every `tier: critical` repository (custom property) with a
// holiday calendar from the admin repository: a deployment on a holiday is held until it ends.
import type { Effect } from "@steward/sandbox-hub";
import type { SandboxStack } from "../../stack.js";
import type { Row, Scenario } from "../types.js";

const OWNER = "acme";
const REPO = "web";
const ENVIRONMENT = "production";
/** Freezes and holidays end this far on the hub's clock; the demo moves the clock past the end instead of waiting. */
const FREEZE_SECONDS = 180;

const policy = (freeze?: { from: Date; to: Date }) =>
  [
    "deployments:",
    "  environments:",
    `    ${ENVIRONMENT}:`,
    "      branches: [main]",
    "      checks: [build, test]",
    ...(freeze
      ? [
          "      freeze:",
          `        - from: ${freeze.from.toISOString()}`,
          `          to: ${freeze.to.toISOString()}`,
          "          reason: release candidate soak",
        ]
      : []),
    "",
  ].join("\n");

const ORG_POLICY = [
  "deployments:",
  "  environments: {}",
  "  by_property:",
  "    - property: tier",
  "      values: [critical]",
  "      environments:",
  `        ${ENVIRONMENT}:`,
  "          branches: [main]",
  "          freeze:",
  "            - { calendar: .github/steward/holidays.ics, reason: holiday }",
  "",
].join("\n");

const icsTime = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
const holidays = (from: Date, to: Date) =>
  [
    "BEGIN:VCALENDAR",
    "VERSION:2.0",
    "PRODID:-//acme//holidays//EN",
    "BEGIN:VEVENT",
    "UID:offsite@acme",
    `DTSTART:${icsTime(from)}`,
    `DTEND:${icsTime(to)}`,
    "SUMMARY:Company offsite",
    "END:VEVENT",
    "END:VCALENDAR",
    "",
  ].join("\r\n");

async function settle(stack: SandboxStack): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await stack.hub.domains.idle();
    await stack.hub.control.settled();
    await stack.steward.engine.idle();
  }
}

/** Settle and look again until an effect of `kinds` appears for the run (bounded). */
async function effectFor(stack: SandboxStack, runId: number, kinds: string[], timeoutMs = 15_000): Promise<Effect> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    await settle(stack);
    const found = stack.hub.domains.effects
      .of("deployments")
      .find((e) => kinds.includes(e.kind.slice("deployments.".length)) && e.detail.run_id === runId);
    if (found) return found;
    if (Date.now() > end) throw new Error(`no ${kinds.join(" or ")} for run ${runId} within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The comment's reasons on one line, for the table. */
const reasonsOf = (effect: Effect) =>
  String(effect.detail.comment ?? "")
    .split("\n")
    .slice(1)
    .map((l) => l.replace(/^- /, ""))
    .join("; ");

function deploy(stack: SandboxStack, branch: string, print: (line: string) => void): number {
  const { actions } = stack.hub.domains;
  const run = actions.startRun({
    owner: OWNER,
    repo: REPO,
    workflow: "Deploy",
    branch,
    jobs: [{ name: "build" }, { name: "test" }, { name: "deploy", needs: ["build", "test"], environment: ENVIRONMENT }],
  });
  actions.completeJob({ runId: run.id, job: "build" });
  actions.completeJob({ runId: run.id, job: "test" });
  print(`run ${run.id} on ${branch}: build and test passed, deploy to ${ENVIRONMENT} requested`);
  return run.id;
}

const scenario: Scenario = {
  name: "deployments held, approved and rejected by policy",
  async run(stack, print) {
    const { control, domains, hub } = stack.hub;
    const rows: Row[] = [];
    const repo = control.repo(OWNER, REPO);
    if (!repo) throw new Error(`${OWNER}/${REPO} is not in the sandbox`);
    domains.deployments.putEnvironment(repo, ENVIRONMENT, { protectionApps: [hub.appId] });
    control.pushFiles({
      owner: OWNER,
      repo: REPO,
      files: { ".github/steward.yml": policy() },
      message: "Gate production deployments",
    });
    await settle(stack);
    rows.push({
      step: `policy: ${ENVIRONMENT} needs main + build, test`,
      event: "push",
      result: "Steward is the protection rule",
    });

    const green = deploy(stack, repo.default_branch, print);
    const approved = await effectFor(stack, green, ["protection_rule.approved", "protection_rule.rejected"]);
    rows.push({
      step: `deploy ${repo.default_branch}, checks green`,
      event: "deployment_protection_rule.requested",
      result: `${approved.kind.split(".").pop()}: ${reasonsOf(approved)}`,
    });

    // A feature branch has no commits of its own here: the run names the branch, which is what the policy judges.
    const feature = deploy(stack, "feature/login", print);
    const rejected = await effectFor(stack, feature, ["protection_rule.approved", "protection_rule.rejected"]);
    rows.push({
      step: "deploy feature/login",
      event: "deployment_protection_rule.requested",
      result: `${rejected.kind.split(".").pop()}: ${reasonsOf(rejected)}`,
    });

    const now = control.now();
    const freeze = {
      from: new Date(now.getTime() - 60_000),
      to: new Date(Math.ceil((now.getTime() + FREEZE_SECONDS * 1000) / 1000) * 1000),
    };
    control.pushFiles({
      owner: OWNER,
      repo: REPO,
      files: { ".github/steward.yml": policy(freeze) },
      message: "Freeze production",
    });
    await settle(stack);
    rows.push({ step: `policy: freeze until ${freeze.to.toISOString()}`, event: "push", result: "policy reloaded" });

    const frozen = deploy(stack, repo.default_branch, print);
    const held = await effectFor(stack, frozen, [
      "protection_rule.status_report",
      "protection_rule.approved",
      "protection_rule.rejected",
    ]);
    rows.push({
      step: `deploy ${repo.default_branch} during the freeze`,
      event: "deployment_protection_rule.requested",
      result: `${held.kind.endsWith(".status_report") ? "waiting" : held.kind.split(".").pop()}: ${reasonsOf(held)}`,
    });
    print(
      `waiting for the freeze to end: moving the sandbox clock from ${control.now().toISOString()} past ${freeze.to.toISOString()}`,
    );
    control.advanceClock(freeze.to.getTime() - control.now().getTime() + 1000);
    const released = await effectFor(stack, frozen, ["protection_rule.approved", "protection_rule.rejected"], 20_000);
    rows.push({
      step: `freeze over at ${control.now().toISOString()}`,
      event: "scheduled re-evaluation",
      result: `${released.kind.split(".").pop()}: ${reasonsOf(released)}`,
    });

    // The organisation gates critical repositories; today is a holiday in its calendar.
    const start = control.now();
    const holidayEnd = new Date(Math.ceil((start.getTime() + FREEZE_SECONDS * 1000) / 1000) * 1000);
    control.pushFiles({
      owner: OWNER,
      repo: REPO,
      files: { ".github/steward.yml": policy() },
      message: "Lift the freeze",
    });
    control.pushFiles({
      owner: OWNER,
      repo: ".github",
      files: {
        ".github/steward.yml": ORG_POLICY,
        ".github/steward/holidays.ics": holidays(new Date(start.getTime() - 3_600_000), holidayEnd),
      },
      message: "Gate critical repositories",
    });
    domains.properties.setValues(OWNER, REPO, { tier: "critical" });
    await settle(stack);
    rows.push({
      step: `org policy: tier critical gates ${ENVIRONMENT} (holidays.ics); ${OWNER}/${REPO} is tier: critical`,
      event: "push",
      result: "policy reloaded",
    });
    const holiday = deploy(stack, repo.default_branch, print);
    const gated = await effectFor(stack, holiday, [
      "protection_rule.status_report",
      "protection_rule.approved",
      "protection_rule.rejected",
    ]);
    rows.push({
      step: `deploy ${repo.default_branch} on a holiday`,
      event: "deployment_protection_rule.requested",
      result: `${gated.kind.endsWith(".status_report") ? "waiting" : gated.kind.split(".").pop()}: ${reasonsOf(gated)}`,
    });
    print(`waiting for the holiday to end: moving the sandbox clock past ${holidayEnd.toISOString()}`);
    control.advanceClock(holidayEnd.getTime() - control.now().getTime() + 1000);
    const after = await effectFor(stack, holiday, ["protection_rule.approved", "protection_rule.rejected"], 20_000);
    rows.push({
      step: `holiday over at ${control.now().toISOString()}`,
      event: "scheduled re-evaluation",
      result: `${after.kind.split(".").pop()}: ${reasonsOf(after)}`,
    });
    return rows;
  },
};

export default scenario;
