import { describe, expect, it } from "vitest";
import { computePlan, countPlan, scopeReadKey, type PlanInput } from "../../../handlers/secrets/plan.js";
import {
  targetKey,
  type ActualTarget,
  type DesiredTarget,
  type Scope,
  type TargetRecord,
} from "../../../handlers/secrets/targets.js";

const repo = (name: string): Scope => ({ level: "repo", repo: name });
const org: Scope = { level: "org" };

function desired(
  kind: "secret" | "variable",
  scope: Scope,
  name: string,
  extra: Partial<DesiredTarget> = {},
): DesiredTarget {
  return {
    key: targetKey(kind, scope, name),
    kind,
    scope,
    name,
    ...(kind === "secret" ? { from: "env:X" } : { value: "v1" }),
    ...extra,
  };
}
function actual(
  d: { kind: "secret" | "variable"; scope: Scope; name: string },
  extra: Partial<ActualTarget> = {},
): ActualTarget {
  return {
    key: targetKey(d.kind, d.scope, d.name),
    kind: d.kind,
    scope: d.scope,
    name: d.name,
    updatedAt: "2024-01-01T00:00:00Z",
    ...extra,
  };
}
function record(
  d: { kind: "secret" | "variable"; scope: Scope; name: string },
  extra: Partial<TargetRecord> = {},
): TargetRecord {
  return {
    kind: d.kind,
    scope: d.scope,
    name: d.name,
    fingerprint: "fp1",
    remoteUpdatedAt: "2024-01-01T00:00:00Z",
    created: true,
    writtenAt: "2024-01-01T00:00:00Z",
    ...extra,
  };
}

function input(parts: {
  d?: DesiredTarget[];
  a?: ActualTarget[];
  r?: [string, TargetRecord][];
  fp?: string;
  prune?: boolean;
  unread?: string[];
  adopt?: boolean;
}): PlanInput {
  const d = parts.d ?? [];
  const scopes = new Set<string>();
  for (const t of [...d, ...(parts.a ?? []), ...(parts.r ?? []).map(([, r]) => r)])
    scopes.add(scopeReadKey(t.kind, t.scope));
  for (const u of parts.unread ?? []) scopes.delete(u);
  return {
    desired: d,
    fingerprints: new Map(d.map((t) => [t.key, parts.fp ?? "fp1"])),
    actual: new Map((parts.a ?? []).map((t) => [t.key, t])),
    records: new Map(parts.r ?? []),
    readScopes: scopes,
    prune: parts.prune ?? true,
    ...(parts.adopt === undefined ? {} : { adopt: new Map(d.map((t) => [t.key, parts.adopt!])) }),
  };
}

const s = desired("secret", repo("web"), "NPM_TOKEN");
const v = desired("variable", repo("web"), "REGION", { value: "eu-west-1" });
const os = desired("secret", org, "ORG_TOKEN", { visibility: "selected", selectedRepositoryIds: [1, 2] });

describe("computePlan", () => {
  const cases: { title: string; in: PlanInput; action: string; reason: RegExp; changes?: string[] }[] = [
    { title: "missing secret is created", in: input({ d: [s] }), action: "create", reason: /^missing$/ },
    {
      title: "secret deleted out of band is recreated",
      in: input({ d: [s], r: [[s.key, record(s)]] }),
      action: "create",
      reason: /deleted out of band/,
    },
    {
      title: "secret in sync is unchanged",
      in: input({ d: [s], a: [actual(s)], r: [[s.key, record(s)]] }),
      action: "unchanged",
      reason: /in sync/,
    },
    {
      title: "secret whose value changed in policy is updated",
      in: input({ d: [s], a: [actual(s)], r: [[s.key, record(s)]], fp: "fp2" }),
      action: "update",
      reason: /changed in policy/,
      changes: ["value"],
    },
    {
      title: "secret changed out of band (updated_at moved) is repaired",
      in: input({ d: [s], a: [actual(s, { updatedAt: "2024-02-02T00:00:00Z" })], r: [[s.key, record(s)]] }),
      action: "update",
      reason: /out of band.*2024-02-02/,
    },
    {
      title: "pending baseline: updated_at not after Steward's write is adopted, not rewritten",
      in: input({
        d: [s],
        a: [actual(s, { updatedAt: "2024-03-03T10:00:00Z" })],
        r: [[s.key, record(s, { remoteUpdatedAt: "", serverWrittenAt: "2024-03-03T10:00:00.000Z" })]],
      }),
      action: "unchanged",
      reason: /in sync/,
    },
    {
      title: "pending baseline: updated_at after Steward's write is drift",
      in: input({
        d: [s],
        a: [actual(s, { updatedAt: "2024-03-03T10:00:02Z" })],
        r: [[s.key, record(s, { remoteUpdatedAt: "", serverWrittenAt: "2024-03-03T10:00:00.000Z" })]],
      }),
      action: "update",
      reason: /out of band after Steward's write/,
    },
    {
      title: "secret present without a record is a conflict without adopt (never overwritten)",
      in: input({ d: [s], a: [actual(s)] }),
      action: "unchanged",
      reason: /did not create it, so it is left as it is .*set `adopt: true` on secrets\.NPM_TOKEN/,
    },
    {
      title: "secret present without a record is a conflict with adopt: false",
      in: input({ d: [s], a: [actual(s)], adopt: false }),
      action: "unchanged",
      reason: /left as it is/,
    },
    {
      title: "secret present without a record is adopted with adopt: true (written once)",
      in: input({ d: [s], a: [actual(s)], adopt: true }),
      action: "update",
      reason: /adopted \(adopt: true\)/,
    },
    {
      title: "variable with another value and no record is a conflict without adopt",
      in: input({ d: [v], a: [actual(v, { value: "us-east-1" })] }),
      action: "unchanged",
      reason: /value differs from policy.*variables\.REGION/,
    },
    {
      title: "variable with the same value is unchanged even without a record",
      in: input({ d: [v], a: [actual(v, { value: "eu-west-1" })] }),
      action: "unchanged",
      reason: /matches/,
    },
    {
      title: "variable edited out of band is repaired",
      in: input({ d: [v], a: [actual(v, { value: "us-east-1" })], r: [[v.key, record(v)]] }),
      action: "update",
      reason: /out of band/,
    },
    {
      title: "variable changed in policy is updated",
      in: input({ d: [v], a: [actual(v, { value: "us-east-1" })], r: [[v.key, record(v)]], fp: "fp9" }),
      action: "update",
      reason: /changed in policy/,
    },
    {
      title: "org secret: repository list change is not a value change",
      in: input({
        d: [os],
        a: [actual(os, { visibility: "selected", selectedRepositoryIds: [1] })],
        r: [[os.key, record(os)]],
      }),
      action: "update",
      reason: /selected repositories \+1 -0/,
      changes: ["repositories"],
    },
    {
      title: "org secret: visibility change alone",
      in: input({
        d: [{ ...os, visibility: "all", selectedRepositoryIds: undefined }],
        a: [actual(os, { visibility: "private" })],
        r: [[os.key, record(os)]],
      }),
      action: "update",
      reason: /visibility private -> all/,
      changes: ["visibility"],
    },
    {
      title: "org secret: same ids in another order are unchanged",
      in: input({
        d: [os],
        a: [actual(os, { visibility: "selected", selectedRepositoryIds: [2, 1] })],
        r: [[os.key, record(os)]],
      }),
      action: "unchanged",
      reason: /in sync/,
    },
  ];
  for (const c of cases) {
    it(c.title, () => {
      const plan = computePlan(c.in);
      expect(plan.rows).toHaveLength(1);
      expect(plan.rows[0]!.action).toBe(c.action);
      expect(plan.rows[0]!.reason).toMatch(c.reason);
      if (c.changes) expect(plan.rows[0]!.changes).toEqual(c.changes);
    });
  }

  it("prunes only what Steward created, and only when prune is on", () => {
    const mine = desired("secret", repo("web"), "OLD");
    const adopted = desired("secret", repo("web"), "ADOPTED");
    const human = desired("secret", repo("web"), "HUMAN");
    const base = {
      a: [actual(mine), actual(adopted), actual(human)],
      r: [
        [mine.key, record(mine)],
        [adopted.key, record(adopted, { created: false })],
      ] as [string, TargetRecord][],
    };
    const on = computePlan(input({ ...base, prune: true }));
    expect(on.rows.map((r) => [r.name, r.action])).toEqual([
      ["ADOPTED", "unchanged"],
      ["OLD", "delete"],
    ]);
    expect(on.forget).toEqual([adopted.key]);
    const off = computePlan(input({ ...base, prune: false }));
    expect(off.rows.map((r) => [r.name, r.action])).toEqual([
      ["ADOPTED", "unchanged"],
      ["OLD", "unchanged"],
    ]);
    expect(off.rows[1]!.reason).toMatch(/prune is off/);
  });

  it("forgets records of targets gone everywhere, and does not judge unread scopes", () => {
    const gone = desired("secret", repo("old"), "GONE");
    const elsewhere = desired("secret", repo("api"), "X");
    const plan = computePlan(
      input({ d: [elsewhere], r: [[gone.key, record(gone)]], unread: [scopeReadKey("secret", repo("api"))] }),
    );
    expect(plan.rows).toEqual([]);
    expect(plan.forget).toEqual([gone.key]);
  });

  it("hands pending baselines to the caller to record", () => {
    const plan = computePlan(
      input({
        d: [s],
        a: [actual(s, { updatedAt: "2024-03-03T09:59:59Z" })],
        r: [[s.key, record(s, { remoteUpdatedAt: "", serverWrittenAt: "2024-03-03T10:00:00.000Z" })]],
      }),
    );
    expect(plan.baselines).toEqual([{ key: s.key, updatedAt: "2024-03-03T09:59:59Z" }]);
    expect(computePlan(input({ d: [s], a: [actual(s)], r: [[s.key, record(s)]] })).baselines).toEqual([]);
  });

  it("counts actions", () => {
    const plan = computePlan(input({ d: [s, v], a: [actual(v, { value: "eu-west-1" })] }));
    expect(countPlan(plan.rows)).toEqual({ create: 1, update: 0, delete: 0, unchanged: 1 });
  });
});
