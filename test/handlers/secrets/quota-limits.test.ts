// Each of GitHub's documented limits on secrets and variables, at the plan: one past it warns with
// the count and GitHub's words, exactly at it stays quiet (or says "near"), per scope and kind.
import { describe, expect, it } from "vitest";
import type { PlanRow } from "../../../handlers/secrets/plan.js";
import { quotaWarnings } from "../../../handlers/secrets/quotas.js";
import { targetKey, type ActualTarget, type Kind, type Scope } from "../../../handlers/secrets/targets.js";

const ORG: Scope = { level: "org" };
const REPO: Scope = { level: "repo", repo: "web" };
const ENV: Scope = { level: "env", repo: "web", environment: "production" };

function existing(
  kind: Kind,
  scope: Scope,
  n: number,
  value?: (i: number) => string,
  extra: Partial<ActualTarget> = {},
): Map<string, ActualTarget> {
  const out = new Map<string, ActualTarget>();
  for (let i = 0; i < n; i++) {
    const name = `OLD_${i}`;
    const key = targetKey(kind, scope, name);
    out.set(key, {
      key,
      kind,
      scope,
      name,
      updatedAt: "2026-11-01T00:00:00Z",
      ...(value ? { value: value(i) } : {}),
      ...extra,
    });
  }
  return out;
}

function create(kind: Kind, scope: Scope, name: string, extra: Partial<PlanRow> = {}): PlanRow {
  return {
    key: targetKey(kind, scope, name),
    kind,
    scope,
    name,
    action: "create",
    changes: ["value"],
    reason: "new",
    created: true,
    ...extra,
  };
}

describe("count limits, in GitHub's words", () => {
  it.each([
    [
      "secret",
      ORG,
      1000,
      "org would have 1,001 secrets, over GitHub's limit of 1,000 organization secrets: the writes past it will fail",
    ],
    [
      "secret",
      REPO,
      100,
      "repo web would have 101 secrets, over GitHub's limit of 100 repository secrets: the writes past it will fail",
    ],
    [
      "secret",
      ENV,
      100,
      "env web/production would have 101 secrets, over GitHub's limit of 100 environment secrets: the writes past it will fail",
    ],
    [
      "variable",
      ORG,
      1000,
      "org would have 1,001 variables, over GitHub's limit of 1,000 organization variables: the writes past it will fail",
    ],
    [
      "variable",
      REPO,
      500,
      "repo web would have 501 variables, over GitHub's limit of 500 variables per repository: the writes past it will fail",
    ],
    [
      "variable",
      ENV,
      100,
      "env web/production would have 101 variables, over GitHub's limit of 100 variables per environment: the writes past it will fail",
    ],
  ] as const)("%s in %o: %i is the limit", (kind, scope, limit, over) => {
    const value = kind === "variable" ? () => "v" : undefined;
    const full = existing(kind, scope, limit - 1, value);
    const sizes = new Map([[targetKey(kind, scope, "NEW"), 1]]);
    // Reaching the limit is allowed (GitHub refuses the write after it), so it is only "near".
    expect(quotaWarnings(full, [create(kind, scope, "NEW")], sizes)).toEqual([
      over.replace(
        / would have [\d,]+ (\w+), over (GitHub's limit of .*?):.*/,
        ` would have ${limit.toLocaleString("en-US")} $1, near $2`,
      ),
    ]);
    const past = existing(kind, scope, limit, value);
    expect(quotaWarnings(past, [create(kind, scope, "NEW")], sizes)).toEqual([over]);
    // A deletion in the same plan makes room.
    const del: PlanRow = {
      key: [...past.keys()][0]!,
      kind,
      scope,
      name: "OLD_0",
      action: "delete",
      changes: [],
      reason: "pruned",
      created: false,
    };
    expect(quotaWarnings(past, [del, create(kind, scope, "NEW")], sizes)).toEqual([
      over.replace(
        / would have [\d,]+ (\w+), over (GitHub's limit of .*?):.*/,
        ` would have ${limit.toLocaleString("en-US")} $1, near $2`,
      ),
    ]);
  });

  it("stays quiet well below the limits", () => {
    expect(quotaWarnings(existing("secret", REPO, 50), [create("secret", REPO, "NEW")], new Map())).toEqual([]);
  });
});

describe("48 KB per value", () => {
  it.each(["secret", "variable"] as const)("a %s of 48 KB is fine, one byte more is not", (kind) => {
    const row = create(kind, REPO, "BIG");
    expect(quotaWarnings(new Map(), [row], new Map([[row.key, 48 * 1024]]))).toEqual([]);
    expect(quotaWarnings(new Map(), [row], new Map([[row.key, 48 * 1024 + 1]]))).toEqual([
      `${kind} BIG in repo web is 48.0 KB, over GitHub's limit of 48 KB per ${kind}: its write will fail`,
    ]);
  });
});

describe("256 KB of organization and repository variables per workflow run", () => {
  const kb = (n: number) => "x".repeat(n * 1024);
  it("adds a repository's variables to the organization variables it can use", () => {
    const org = existing("variable", ORG, 4, () => kb(40), { visibility: "all" }); // 160 KB
    const rows = [create("variable", REPO, "A"), create("variable", REPO, "B"), create("variable", REPO, "C")];
    const sizes = new Map(rows.map((r) => [r.key, 32 * 1024])); // 96 KB: 256 KB together, at the limit
    expect(quotaWarnings(org, rows, sizes)).toEqual([]);
    sizes.set(rows[0]!.key, 32 * 1024 + 1);
    expect(quotaWarnings(org, rows, sizes)).toEqual([
      "repo web would have 96.0 KB of repository variables and 160.0 KB of organization variables it can use, 256.0 KB together, over GitHub's limit of 256 KB for organization and repository variables per workflow run: a run would not get the variables past it (alphabetically)",
    ]);
  });

  it("counts a selected organization variable only for the repositories it is shared with", () => {
    const org = existing("variable", ORG, 1, () => kb(200), { visibility: "selected", selectedRepositoryIds: [7] });
    const web = existing("variable", REPO, 1, () => kb(100));
    const api = existing("variable", { level: "repo", repo: "api" }, 1, () => kb(100));
    const warnings = quotaWarnings(
      new Map([...org, ...web, ...api]),
      [],
      new Map(),
      new Map([
        ["web", 7],
        ["api", 8],
      ]),
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^repo web would have 100\.0 KB of repository variables and 200\.0 KB of organization variables it can use, 300\.0 KB together, over GitHub's limit of 256 KB/,
    );
  });

  it("warns at the organization when its shared variables alone pass it", () => {
    const org = existing("variable", ORG, 3, () => kb(90), { visibility: "private" });
    expect(quotaWarnings(org, [], new Map())).toEqual([
      "org would have 270.0 KB of organization variables shared with every repository, over GitHub's limit of 256 KB for organization and repository variables per workflow run: a run would not get the variables past it (alphabetically)",
    ]);
  });

  it("ignores secrets and environment variables (their limits are their own)", () => {
    const secrets = existing("secret", REPO, 10);
    const env = existing("variable", ENV, 6, () => kb(45));
    expect(quotaWarnings(new Map([...secrets, ...env]), [], new Map())).toEqual([]);
  });
});
