// Deployments gated by policy: Steward is a custom protection rule on acme/web's production
// environment. A deployment from main with green checks is approved, one from a feature branch
// rejected, and one during a freeze held until the freeze ends, then approved. Then the
// organisation gates production of every `tier: critical` repository (custom property) with a
// holiday calendar from the admin repository: a deployment on a holiday is held until it ends.
// Steward's decisions are read from the hub's effects, so it plays into a running sandbox too.
import type { Effect } from "@steward/sandbox-hub";
import type { Print, Row, Scenario } from "../types.js";
import { stackTarget, type DemoTarget } from "../target.js";

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

async function settle(t: DemoTarget): Promise<void> {
  for (let i = 0; i < 3; i++) await t.settle();
}

/** Settle and look again until an effect of `kinds` appears for the run (bounded). */
async function effectFor(t: DemoTarget, runId: number, kinds: string[], timeoutMs = 15_000): Promise<Effect> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    await settle(t);
    const found = (await t.control<Effect[]>("effects")).find(
      (e) =>
        e.kind.startsWith("deployments.") &&
        kinds.includes(e.kind.slice("deployments.".length)) &&
        e.detail.run_id === runId,
    );
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

/** What Steward answered: approved or rejected with its reasons, or waiting (a status report, held). */
const verdictOf = (e: Effect) =>
  `${e.kind.endsWith(".status_report") ? "waiting" : e.kind.split(".").pop()}: ${reasonsOf(e)}`;
const DECIDED = ["protection_rule.approved", "protection_rule.rejected"];
const HELD_OR_DECIDED = ["protection_rule.status_report", ...DECIDED];

const now = async (t: DemoTarget) => new Date(await t.control<string | Date>("now"));

async function deploy(t: DemoTarget, branch: string, print: (line: string) => void): Promise<number> {
  const run = await t.domain<{ id: number }>("actions", "startRun", {
    owner: OWNER,
    repo: REPO,
    workflow: "Deploy",
    branch,
    jobs: [{ name: "build" }, { name: "test" }, { name: "deploy", needs: ["build", "test"], environment: ENVIRONMENT }],
  });
  await t.domain("actions", "completeJob", { runId: run.id, job: "build" });
  await t.domain("actions", "completeJob", { runId: run.id, job: "test" });
  print(`run ${run.id} on ${branch}: build and test passed, deploy to ${ENVIRONMENT} requested`);
  return run.id;
}

/**
 * A deployment from `branch` while `what` (a freeze, a holiday) lasts until `end`: held, then, once
 * the hub's clock has moved past the end instead of waiting, decided on Steward's re-evaluation.
 */
async function heldUntil(t: DemoTarget, branch: string, what: string, end: Date, print: Print): Promise<Row[]> {
  const runId = await deploy(t, branch, print);
  const held = await effectFor(t, runId, HELD_OR_DECIDED);
  const before = await now(t);
  print(
    `waiting for ${what.replace(/^a /, "the ")} to end: moving the sandbox clock from ${before.toISOString()} past ${end.toISOString()}`,
  );
  await t.control("advanceClock", end.getTime() - before.getTime() + 1000);
  const decided = await effectFor(t, runId, DECIDED, 20_000);
  return [
    { step: `deploy ${branch} during ${what}`, event: "deployment_protection_rule.requested", result: verdictOf(held) },
    {
      step: `${what.replace(/^(the|a) /, "")} over at ${(await now(t)).toISOString()}`,
      event: "scheduled re-evaluation",
      result: verdictOf(decided),
    },
  ];
}

async function play(t: DemoTarget, print: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  const repo = await t.control<{ default_branch: string } | null>("repo", OWNER, REPO);
  if (!repo) throw new Error(`${OWNER}/${REPO} is not in the sandbox`);
  await t.domain("deployments", "configureEnvironment", {
    owner: OWNER,
    repo: REPO,
    environment: ENVIRONMENT,
    protectedByApp: true,
  });
  await t.control("pushFiles", {
    owner: OWNER,
    repo: REPO,
    files: { ".github/steward.yml": policy() },
    message: "Gate production deployments",
  });
  await settle(t);
  rows.push({
    step: `policy: ${ENVIRONMENT} needs main + build, test`,
    event: "push",
    result: "Steward is the protection rule",
  });

  const green = await deploy(t, repo.default_branch, print);
  const approved = await effectFor(t, green, DECIDED);
  rows.push({
    step: `deploy ${repo.default_branch}, checks green`,
    event: "deployment_protection_rule.requested",
    result: verdictOf(approved),
  });

  // A feature branch has no commits of its own here: the run names the branch, which is what the policy judges.
  const feature = await deploy(t, "feature/login", print);
  const rejected = await effectFor(t, feature, DECIDED);
  rows.push({
    step: "deploy feature/login",
    event: "deployment_protection_rule.requested",
    result: verdictOf(rejected),
  });

  const started = await now(t);
  const freeze = {
    from: new Date(started.getTime() - 60_000),
    to: new Date(Math.ceil((started.getTime() + FREEZE_SECONDS * 1000) / 1000) * 1000),
  };
  await t.control("pushFiles", {
    owner: OWNER,
    repo: REPO,
    files: { ".github/steward.yml": policy(freeze) },
    message: "Freeze production",
  });
  await settle(t);
  rows.push({ step: `policy: freeze until ${freeze.to.toISOString()}`, event: "push", result: "policy reloaded" });

  rows.push(...(await heldUntil(t, repo.default_branch, "the freeze", freeze.to, print)));

  // The organisation gates critical repositories; today is a holiday in its calendar.
  const start = await now(t);
  const holidayEnd = new Date(Math.ceil((start.getTime() + FREEZE_SECONDS * 1000) / 1000) * 1000);
  await t.control("pushFiles", {
    owner: OWNER,
    repo: REPO,
    files: { ".github/steward.yml": policy() },
    message: "Lift the freeze",
  });
  await t.control("pushFiles", {
    owner: OWNER,
    repo: ".github",
    files: {
      ".github/steward.yml": ORG_POLICY,
      ".github/steward/holidays.ics": holidays(new Date(start.getTime() - 3_600_000), holidayEnd),
    },
    message: "Gate critical repositories",
  });
  await t.domain("properties", "setValues", OWNER, REPO, { tier: "critical" });
  await settle(t);
  rows.push({
    step: `org policy: tier critical gates ${ENVIRONMENT} (holidays.ics); ${OWNER}/${REPO} is tier: critical`,
    event: "push",
    result: "policy reloaded",
  });
  rows.push(...(await heldUntil(t, repo.default_branch, "a holiday", holidayEnd, print)));
  return rows;
}

const scenario: Scenario = {
  name: "deployments held, approved and rejected by policy",
  run: (stack, print) => play(stackTarget(stack), print),
  play,
};

export default scenario;
