// The `deployments` policy section: schema (closed keys) and semantic checks.
import { Ajv } from "ajv";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { deploymentsSection, namesIt, type DeploymentsPolicy } from "../../../handlers/deployments/policy.js";
import { refNamedBy } from "../../../handlers/deployments/decide.js";
import { waitsOn, type WaitRecord } from "../../../handlers/deployments/waits.js";
import { createDeploymentsHandler } from "../../../handlers/deployments/index.js";
import { analysePolicyText } from "../../../src/policy/validate.js";

const DOCUMENTED = `deployments:
  environments:
    production:
      branches: [main, "v*"]
      checks: [build, test]
      after: [staging]
      windows:
        - days: [mon, tue, wed, thu, fri]
          hours: "09:00-17:00"
          timezone: Europe/Paris
      freeze:
        - from: 2026-12-20T00:00:00Z
          to: 2027-01-05T00:00:00Z
          reason: year-end freeze
      outside_window: wait
      pending_checks: wait
    "preview-*":
      approve: always
`;

function problems(yamlText: string): string[] {
  const doc = parse(yamlText) as { deployments: DeploymentsPolicy };
  const ajv = new Ajv({ allErrors: true });
  const validate = ajv.compile(deploymentsSection.schema);
  if (!validate(doc.deployments)) return validate.errors!.map((e) => `${e.instancePath} ${e.message}`);
  const found: string[] = [];
  deploymentsSection.check!(doc.deployments, (path, message) => found.push(`${path.join(".")}: ${message}`));
  return found;
}

describe("deployments policy section", () => {
  it("accepts the documented example", () => {
    expect(problems(DOCUMENTED)).toEqual([]);
  });

  it("refuses unknown keys and values", () => {
    expect(problems("deployments:\n  environments:\n    production:\n      branch: [main]\n")).toEqual([
      "/environments/production must NOT have additional properties",
    ]);
    expect(problems("deployments:\n  environments:\n    production:\n      outside_window: later\n")[0]).toContain(
      "must be equal to one of the allowed values",
    );
    expect(
      problems("deployments:\n  environments:\n    production:\n      windows: [{ days: [monday] }]\n")[0],
    ).toContain("/windows/0/days/0");
  });

  it("reports bad globs, zones, hours and ranges by path", () => {
    const found = problems(`
deployments:
  environments:
    "prod[":
      branches: ["release/[", main]
      windows:
        - { hours: "17:00-09:00" }
        - { timezone: Mars/Olympus }
      freeze:
        - { from: "2027-01-05T00:00:00Z", to: "2026-12-20T00:00:00Z" }
        - { from: "yesterday", to: "2026-12-20T00:00:00Z" }
`);
    expect(found).toEqual([
      'environments.prod[: unclosed "[" in glob "prod["',
      'environments.prod[.branches.0: unclosed "[" in glob "release/["',
      'environments.prod[.windows.0.hours: hours "17:00-09:00" end before they start (split a window that spans midnight in two)',
      'environments.prod[.windows.1.timezone: unknown time zone "Mars/Olympus"',
      "environments.prod[.freeze.0.to: freeze ends (2026-12-20T00:00:00Z) before it starts (2027-01-05T00:00:00Z)",
      'environments.prod[.freeze.1.from: "yesterday" is not an ISO 8601 date or time',
    ]);
  });

  it("reports overlapping windows and freezes", () => {
    const found = problems(`
deployments:
  environments:
    production:
      windows:
        - { days: [mon, tue], hours: "09:00-12:00", timezone: Europe/Paris }
        - { days: [tue, wed], hours: "11:00-15:00", timezone: Europe/Paris }
        - { days: [thu], hours: "11:00-15:00", timezone: Europe/Paris }
      freeze:
        - { from: "2026-12-20T00:00:00Z", to: "2027-01-05T00:00:00Z" }
        - { from: "2027-01-04T00:00:00Z", to: "2027-01-10T00:00:00Z" }
        - { from: "2027-01-10T00:00:00Z", to: "2027-01-11T00:00:00Z" }
`);
    expect(found).toEqual([
      "environments.production.windows.1: window overlaps window 1",
      "environments.production.freeze.1: freeze overlaps freeze 1",
    ]);
  });

  it("flags keys that approve: always would ignore, and self-references", () => {
    const found = problems(`
deployments:
  environments:
    staging:
      after: [staging]
    "preview-*":
      approve: always
      checks: [build]
`);
    expect(found).toEqual([
      'environments.staging.after: environment "staging" cannot come after itself',
      'environments.preview-*.checks: "checks" has no effect with "approve: always"',
    ]);
  });

  it("has empty defaults", () => {
    expect(deploymentsSection.key).toBe("deployments");
    expect(deploymentsSection.defaults).toEqual({ environments: {} });
  });
});

describe("deployments section through the policy validator", () => {
  it("reports problems at their line in .github/steward.yml", async () => {
    const { validatePolicyText } = await import("../../../src/policy/validate.js");
    const { default: deployments } = await import("../../../handlers/deployments/index.js");
    const text = [
      "deployments:",
      "  environments:",
      "    production:",
      "      branches: [main]",
      "      windows:",
      "        - timezone: Europe/Pariss",
      "      pending_check: wait",
    ].join("\n");
    const { problems } = validatePolicyText(text, { file: ".github/steward.yml", handlers: [deployments] });
    const brief = problems.map((p) => `${p.line}:${p.severity}:${p.message}`);
    expect(
      brief.some((b) => b.startsWith("7:error:") && b.includes("pending_check") && b.includes("pending_checks")),
    ).toBe(true);
    const documented = validatePolicyText(DOCUMENTED, { file: ".github/steward.yml", handlers: [deployments] });
    expect(documented.problems).toEqual([]);
    expect(
      (documented.value as { deployments: DeploymentsPolicy }).deployments.environments.production!.freeze![0]!.from,
    ).toBe("2026-12-20T00:00:00Z");
    const valid = validatePolicyText(text.replace("pending_check:", "pending_checks:"), {
      file: ".github/steward.yml",
      handlers: [deployments],
    });
    expect(valid.problems.map((p) => `${p.line}:${p.message}`)).toEqual(['6:unknown time zone "Europe/Pariss"']);
  });
});

describe("checks pinned to an app", () => {
  it("accepts plain names and pins, and reports a bad entry at its FILE:LINE:COL", async () => {
    const { validatePolicyText } = await import("../../../src/policy/validate.js");
    const { default: deployments } = await import("../../../handlers/deployments/index.js");
    const good = [
      "deployments:",
      "  environments:",
      "    production:",
      "      checks:",
      "        - build",
      "        - { name: ci, app: github-actions }",
      "        - name: e2e",
      "          apps: [github-actions, buildkite]",
    ].join("\n");
    expect(validatePolicyText(good, { file: ".github/steward.yml", handlers: [deployments] }).problems).toEqual([]);
    const head = ["deployments:", "  environments:", "    production:", "      checks:"];
    const brief = (lines: string[]) =>
      validatePolicyText([...head, ...lines].join("\n"), {
        file: ".github/steward.yml",
        handlers: [deployments],
      }).problems.map((p) => `${p.file}:${p.line}:${p.column}:${p.severity}: ${p.message}`);
    const bad = brief([
      "        - { name: ci, app: GitHub Actions }",
      "        - { name: lint, app: a, apps: [b] }",
      "        - { name: e2e, apps: [ok-app, -bad] }",
      "        - { name: deploy }",
    ]);
    expect(bad).toEqual([
      '.github/steward.yml:5:28:error: app "GitHub Actions" is not a GitHub App slug (lowercase letters, digits and hyphens, as a check run\'s app.slug, e.g. github-actions)',
      '.github/steward.yml:6:39:error: use "app" or "apps" in one check, not both',
      '.github/steward.yml:7:39:error: app "-bad" is not a GitHub App slug (lowercase letters, digits and hyphens, as a check run\'s app.slug, e.g. github-actions)',
      '.github/steward.yml:8:11:warning: check "deploy" names no app: write it as a plain name to accept any app\'s run, or add "app" to pin it',
    ]);
    const unknown = brief(["        - { name: test, ap: github-actions }", "        - { app: github-actions }"]);
    expect(unknown).toContain(
      '.github/steward.yml:5:25:error: unknown key "ap" in "deployments.environments.production.checks.0" (did you mean "app"?)',
    );
    expect(unknown).toContain(
      '.github/steward.yml:6:11:error: "deployments.environments.production.checks.1" is missing required key "name"',
    );
  });
});

describe("calendar keys", () => {
  it("accepts recurring windows and freezes, calendars and report_every", () => {
    expect(
      problems(`deployments:
  environments:
    production:
      report_every: 30m
      windows:
        - { rrule: "FREQ=WEEKLY;BYDAY=TU,TH", start: "2026-01-06T10:00", duration: 4h, timezone: Europe/Paris }
      freeze:
        - { rrule: "RRULE:FREQ=WEEKLY;BYDAY=FR", start: "2026-01-02T15:00", duration: PT65H, timezone: Europe/Paris, reason: weekend }
        - { calendar: .github/steward/holidays.ics, reason: holiday }
`),
    ).toEqual([]);
  });

  it("reports bad rules, durations, mixed kinds and paths at the key, with FILE:LINE:COL", () => {
    const text = `deployments:
  environments:
    production:
      report_every: soon
      windows:
        - { rrule: "FREQ=SECONDLY", start: "2026-01-06T10:00", duration: 4h }
        - { rrule: "FREQ=DAILY", start: "2026-01-06T10:00" }
        - { rrule: "FREQ=DAILY", start: "2026-01-06T10:00", duration: 1h, days: [mon] }
      freeze:
        - { rrule: "FREQ=DAILY", start: "yesterday", duration: 1h }
        - { calendar: ../secrets/holidays.ics }
        - { reason: nothing }
`;
    const analysis = analysePolicyText(text, {
      file: "acme/web:.github/steward.yml",
      handlers: [createDeploymentsHandler()],
    });
    expect(analysis.problems.map((p) => `${p.file}:${p.line}:${p.column}: ${p.message}`)).toEqual([
      'acme/web:.github/steward.yml:4:21: duration "soon" is not like "30m", "8h", "1d" or ISO 8601 "PT8H"',
      "acme/web:.github/steward.yml:6:20: rrule FREQ=SECONDLY is finer than hourly; use HOURLY or coarser",
      'acme/web:.github/steward.yml:7:20: a recurring entry needs "duration" too',
      "acme/web:.github/steward.yml:8:20: use one of rrule/start/duration, calendar or days/hours in one entry, not several",
      'acme/web:.github/steward.yml:10:41: start "yesterday" is not an ISO 8601 date or time',
      'acme/web:.github/steward.yml:11:23: calendar "../secrets/holidays.ics" is not a relative path to an .ics file in the admin repository',
      'acme/web:.github/steward.yml:12:11: a freeze needs "from" and "to", or "rrule" + "start" + "duration", or "calendar"',
    ]);
  });
});

describe("what a rule names", () => {
  // One meaning for deciding and for choosing which waits a finished check re-evaluates: a wait
  // whose rule names `build (linux)` must wake when `build (linux)` completes.
  it("a check or environment name names itself even with glob characters, and globs match", () => {
    expect(namesIt("build (linux)", "build (linux)")).toBe(true);
    expect(namesIt("deploy [eu]", "deploy [eu]")).toBe(true);
    expect(namesIt("test-*", "test-unit")).toBe(true);
    expect(namesIt("test-*", "lint")).toBe(false);
    const record = {
      recheckOn: { checks: ["build (linux)", "e2e-*"], environments: ["Staging"] },
    } as unknown as WaitRecord;
    expect(waitsOn(record, { check: "build (linux)" })).toBe(true);
    expect(waitsOn(record, { check: "e2e-chrome" })).toBe(true);
    expect(waitsOn(record, { check: "lint" })).toBe(false);
  });
  it("branches name branches (bare or full), tags name tags, and a bare ref may be either", () => {
    const rule = { branches: ["main", "release/*"], tags: ["v*"] };
    expect(refNamedBy(rule, "refs/heads/release/1.2")).toEqual({ branch: true, tag: false });
    expect(refNamedBy(rule, "refs/tags/v1.2.0")).toEqual({ branch: false, tag: true });
    expect(refNamedBy(rule, "refs/tags/main")).toEqual({ branch: false, tag: false });
    expect(refNamedBy({ branches: ["refs/heads/main"] }, "refs/heads/main")).toEqual({ branch: true, tag: false });
    expect(refNamedBy(rule, "v2")).toEqual({ branch: false, tag: true });
  });
});
