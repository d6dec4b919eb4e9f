// An absent section means off, unless the handler says it is on by default: the rule the README
// states, applied to a custom handler's section through the real policy resolution.
import { describe, expect, it } from "vitest";
import { defineHandler, type PolicySection } from "../../src/index.js";
import { resolvePolicy } from "../../src/policy/resolve.js";
import { gatePolicy } from "../../src/dispatch/policy-gate.js";

const section = (enabledByDefault?: boolean): PolicySection<{ label: string }> => ({
  key: "labeler",
  schema: { type: "object", properties: { label: { type: "string" } }, additionalProperties: false },
  defaults: { label: "needs-review" },
  ...(enabledByDefault === undefined ? {} : { enabledByDefault }),
});
const handlerWith = (s: PolicySection<{ label: string }>) =>
  defineHandler({ name: "labeler", events: ["pull_request.opened"], policy: s, async handle() {} });

function gate(s: PolicySection<{ label: string }>, files: { org?: string; repo?: string }) {
  const loaded = resolvePolicy(
    {
      ...(files.org !== undefined ? { org: { file: "acme/.github:.github/steward.yml", text: files.org } } : {}),
      ...(files.repo !== undefined ? { repo: { file: "acme/web:.github/steward.yml", text: files.repo } } : {}),
    },
    [handlerWith(s)],
  );
  return gatePolicy(s, loaded);
}

describe("policy gate for a handler's section", () => {
  it("absent everywhere: skipped, saying where it looked", () => {
    const g = gate(section(), { repo: "other: 1\n" });
    expect(g).toEqual({
      run: false,
      reason: 'no "labeler" section in acme/web:.github/steward.yml; the handler is off where it is not configured',
    });
    expect(gate(section(false), {})).toMatchObject({ run: false });
  });

  it("absent but enabledByDefault: runs with the defaults", () => {
    expect(gate(section(true), {})).toEqual({ run: true, policy: { label: "needs-review" } });
  });

  it("set in the repository file or only in the organisation file: runs, defaults underneath", () => {
    expect(gate(section(), { repo: "labeler: {}\n" })).toEqual({ run: true, policy: { label: "needs-review" } });
    expect(gate(section(), { org: "labeler:\n  label: triage\n", repo: "" })).toEqual({
      run: true,
      policy: { label: "triage" },
    });
  });

  it("invalid: skipped with the error, even when on by default", () => {
    const g = gate(section(true), { repo: "labeler:\n  lable: x\n" });
    expect(g.run).toBe(false);
    expect(!g.run && g.reason).toMatch(/^invalid policy: acme\/web:\.github\/steward\.yml:2:3: /);
  });
});
