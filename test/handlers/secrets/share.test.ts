// `share: org`: the repositories an entry names get one organisation secret (or variable) shared
// with exactly them, instead of a copy each. Real sync against the sandbox hub.
import { afterEach, describe, expect, it } from "vitest";
import { resolveDesired } from "../../../handlers/secrets/resolve.js";
import { secretsDocument } from "../../../handlers/secrets/policy.js";
import { createWorld, ORG, type World } from "./world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const REPOS = ["svc-a", "svc-b", "svc-c", "svc-d", "web"];
const POLICY = `
secrets:
  DEPLOY_TOKEN:
    from: env:STEWARD_SECRET_DEPLOY
    repositories: ["svc-*"]
    share: org
  WEB_ONLY:
    from: env:STEWARD_SECRET_DEPLOY
    repositories: [web]
variables:
  REGION:
    value: eu-west-1
    repositories: ["svc-*"]
    share: org
`;

describe("secrets share: org", () => {
  it("writes one selected organisation target instead of one per repository, then grants a new repository access alone", async () => {
    world = await createWorld({ repos: REPOS, env: { STEWARD_SECRET_DEPLOY: "deploy-value" } });
    world.pushPolicy(POLICY);
    const { h } = world;
    const svcIds = ["svc-a", "svc-b", "svc-c", "svc-d"].map((n) => h.control.repo(ORG, n)!.id).sort((a, b) => a - b);

    const first = world.mark();
    const result = await world.sync();
    expect(result.failures).toEqual([]);
    const writes = first().filter((r) => r.method !== "GET");
    // Two organisation writes for the shared entries, one repository write for the unshared one.
    expect(writes.map((r) => `${r.method} ${r.path} ${r.status}`).sort()).toEqual(
      [
        `POST /orgs/${ORG}/actions/variables 201`,
        `PUT /orgs/${ORG}/actions/secrets/DEPLOY_TOKEN 201`,
        `PUT /repos/${ORG}/web/actions/secrets/WEB_ONLY 201`,
      ].sort(),
    );
    const secret = h.domains.secrets.get({ kind: "org", org: ORG }, "DEPLOY_TOKEN")!;
    expect(secret.visibility).toBe("selected");
    expect([...secret.selected].sort((a, b) => a - b)).toEqual(svcIds);
    expect(h.domains.secrets.openedValue({ org: ORG }, "DEPLOY_TOKEN")).toBe("deploy-value");
    for (const name of ["svc-a", "svc-d"])
      expect(
        h.domains.secrets.get({ kind: "repo", repoId: h.control.repo(ORG, name)!.id }, "DEPLOY_TOKEN"),
      ).toBeUndefined();
    // The unshared entry is a repository secret, found where the lookup above looked.
    expect(h.domains.secrets.get({ kind: "repo", repoId: h.control.repo(ORG, "web")!.id }, "WEB_ONLY")).toBeDefined();

    // Nothing changed: nothing written.
    const again = world.mark();
    await world.sync();
    expect(again().filter((r) => r.method !== "GET")).toEqual([]);

    // A new repository the globs match: one PUT granting it access, per shared entry; no copy, no list replaced.
    const added = h.control.createRepo({ owner: ORG, name: "svc-e" });
    const later = world.mark();
    const grown = await world.sync({ onlyRepos: ["svc-e"] });
    expect(grown.failures).toEqual([]);
    expect(
      later()
        .filter((r) => r.method !== "GET")
        .map((r) => `${r.method} ${r.path} ${r.status}`)
        .sort(),
    ).toEqual(
      [
        `PUT /orgs/${ORG}/actions/secrets/DEPLOY_TOKEN/repositories/${added.id} 204`,
        `PUT /orgs/${ORG}/actions/variables/REGION/repositories/${added.id} 204`,
      ].sort(),
    );
    expect(h.domains.secrets.get({ kind: "org", org: ORG }, "DEPLOY_TOKEN")!.selected).toContain(added.id);
  });

  it("reaches the same repositories as the copies would (archived ones excluded)", () => {
    const repos = [
      { id: 3, name: "svc-b" },
      { id: 1, name: "svc-a" },
      { id: 2, name: "svc-old", archived: true },
      { id: 4, name: "web" },
    ];
    const entry = { from: "env:X", repositories: ["svc-*"] };
    const copies = resolveDesired({ secrets: { X: entry }, variables: {}, prune: false }, repos);
    const shared = resolveDesired({ secrets: { X: { ...entry, share: "org" } }, variables: {}, prune: false }, repos);
    const idOf = new Map(repos.map((r) => [r.name, r.id]));
    expect(shared).toEqual([
      expect.objectContaining({
        key: "secret/org/X",
        visibility: "selected",
        selectedRepositoryIds: copies.map((c) => idOf.get((c.scope as { repo: string }).repo)!).sort((a, b) => a - b),
      }),
    ]);
    // Matching nothing makes no organisation target at all.
    expect(
      resolveDesired(
        { secrets: { X: { from: "env:X", repositories: ["none-*"], share: "org" } }, variables: {}, prune: false },
        repos,
      ),
    ).toEqual([]);
  });

  it("refuses share: org beside an org placement, and warns when it shares with nothing", () => {
    const problems: { path: (string | number)[]; message: string; severity?: string }[] = [];
    const report = (path: (string | number)[], message: string, severity?: string) =>
      problems.push({ path, message, ...(severity ? { severity } : {}) });
    secretsDocument.check!(
      {
        secrets: {
          A: { from: "env:A", repositories: ["x"], share: "org", org: { visibility: "all" } },
          B: { from: "env:B", share: "org", org: { visibility: "all" } },
        },
        variables: { C: { value: "1", share: "org" } },
        prune: false,
      },
      report as never,
    );
    expect(problems.filter((p) => p.path.join(".") === "secrets.A.share" && !p.severity).map((p) => p.message)).toEqual(
      [expect.stringMatching(/cannot be combined with "org"/)],
    );
    expect(problems.some((p) => p.path.join(".") === "variables.C.share" && p.severity === "warning")).toBe(true);
  });
});
