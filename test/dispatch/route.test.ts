// Routing (src/dispatch/route.ts): which handlers take a delivery (their events, then their own
// narrowing), and which pushes may touch a policy file, judged from the text before it is parsed,
// never saying "no" where the parsed payload would say "yes".
import { describe, expect, it } from "vitest";
import { examples } from "../support/webhook-examples.js";
import {
  engineTakes,
  PUSH_COMMITS_LISTED,
  pushMayTouchPolicy,
  pushTouchesPolicy,
  routeDelivery,
  takesEvent,
} from "../../src/dispatch/route.js";
import type { RoutedDelivery } from "../../src/handler.js";
import secrets from "../../handlers/secrets/index.js";
import { testConfig } from "../engine/helpers.js";

interface Example {
  name: string;
  examples: Record<string, any>[];
}

const pushes = (examples as unknown as Example[]).find((e) => e.name === "push")!.examples;

function touching(path: string): Record<string, any> {
  const p = structuredClone(pushes.find((x) => x.commits.length > 0)!);
  p.commits[0].modified = ["README.md", path];
  return p;
}

describe("pushMayTouchPolicy", () => {
  it("says no for the example pushes, which touch no policy file", () => {
    for (const p of pushes) {
      expect(pushTouchesPolicy("push", p)).toBe(false);
      expect(pushMayTouchPolicy(JSON.stringify(p))).toBe(false);
    }
  });

  it("says yes whenever the parsed payload touches a policy file, escaped characters included", () => {
    for (const path of [".github/steward.yml", ".github/steward.yaml", ".github/steward/secrets.yml"]) {
      const text = JSON.stringify(touching(path));
      expect(pushTouchesPolicy("push", JSON.parse(text))).toBe(true);
      expect(pushMayTouchPolicy(text)).toBe(true);
      // JSON may spell any character as \uXXXX (and a slash as \/): the parsed path is the same.
      const escaped = text.replace(`.github/${path.slice(8)}`, `.github\\/\\u0073teward${path.slice(15)}`);
      expect(escaped).not.toContain("steward");
      expect(pushTouchesPolicy("push", JSON.parse(escaped))).toBe(true);
      expect(pushMayTouchPolicy(escaped)).toBe(true);
    }
  });

  it("takes a push listing as many commits as GitHub lists to touch a policy file, from its text too", () => {
    const base = pushes.find((x) => x.commits.length > 0)!;
    // The smallest commits GitHub could list: no message, no paths, empty names.
    const commit = {
      id: "0".repeat(40),
      tree_id: "1".repeat(40),
      distinct: true,
      message: "",
      timestamp: "2024-01-01T00:00:00Z",
      url: `https://github.com/o/r/commit/${"0".repeat(40)}`,
      author: { name: "", email: "" },
      committer: { name: "", email: "" },
      added: [],
      removed: [],
      modified: [],
    };
    const long = {
      ...structuredClone(base),
      commits: Array.from({ length: PUSH_COMMITS_LISTED }, () => commit),
      head_commit: commit,
    };
    const text = JSON.stringify(long);
    expect(text).not.toContain("steward");
    expect(pushTouchesPolicy("push", long)).toBe(true);
    expect(pushMayTouchPolicy(text)).toBe(true);
    const shorter = { ...long, commits: long.commits.slice(1) };
    expect(pushTouchesPolicy("push", shorter)).toBe(false);
  });
});

describe("takesEvent", () => {
  it("matches every event, an event with any action, or one action of it, and nothing that only looks alike", () => {
    const events = ["workflow_run.completed", "push", "pull_request.opened"];
    expect(takesEvent(events, "workflow_run", "completed")).toBe(true);
    expect(takesEvent(events, "workflow_run", "requested")).toBe(false);
    expect(takesEvent(events, "push", undefined)).toBe(true);
    expect(takesEvent(events, "push", "anything")).toBe(true);
    expect(takesEvent(events, "pull_request", "opened")).toBe(true);
    expect(takesEvent(events, "pull_request", "reopened")).toBe(false);
    expect(takesEvent(events, "pull_request", undefined)).toBe(false);
    // Same length, same ends, a different separator or middle: not a match.
    expect(takesEvent(["workflow_runXcompleted"], "workflow_run", "completed")).toBe(false);
    expect(takesEvent(["workflow.run.completed"], "workflow", "run_completed")).toBe(false);
    expect(takesEvent(["a.b.c"], "a.b", "c")).toBe(true);
    expect(takesEvent(["a.b.c"], "a", "b.c")).toBe(true);
    expect(takesEvent(["*"], "anything", undefined)).toBe(true);
    expect(takesEvent([], "push", undefined)).toBe(false);
    // Against the plain definition, over every example event and action and a few event lists.
    const all = (examples as unknown as Example[]).flatMap((g) =>
      g.examples.map((e) => ({ event: g.name, action: typeof e.action === "string" ? e.action : undefined })),
    );
    const lists = [
      ["push"],
      ["issues.opened", "issues.closed"],
      ["workflow_run.completed", "workflow_job"],
      ["check_suite.requested", "check_run.rerequested", "pull_request"],
    ];
    for (const list of lists) {
      for (const { event, action } of all) {
        const plain = list.some(
          (e) => e === "*" || e === event || (action !== undefined && e === `${event}.${action}`),
        );
        expect(takesEvent(list, event, action), `${list.join(",")} ${event}.${action}`).toBe(plain);
      }
    }
  });
});

describe("routeDelivery", () => {
  const config = testConfig({ adminRepo: ".github" });
  const onlyAcme = {
    name: "acme-only",
    events: ["push", "issues.opened"],
    takes: (d: RoutedDelivery) => d.repository?.startsWith("acme/") ?? true,
  };
  const everything = { name: "all", events: ["*"] };
  const broken = {
    name: "broken",
    events: ["push"],
    takes(): boolean {
      throw new Error("a bug in the predicate");
    },
  };

  it("takes a handler by its events, then by its own narrowing from the event, action and repository", () => {
    const names = (d: RoutedDelivery) => routeDelivery([onlyAcme, everything], d, config).map((h) => h.name);
    expect(names({ event: "push", action: undefined, repository: "acme/web" })).toEqual(["acme-only", "all"]);
    expect(names({ event: "push", action: undefined, repository: "other/web" })).toEqual(["all"]);
    expect(names({ event: "push", action: undefined, repository: undefined })).toEqual(["acme-only", "all"]);
    expect(names({ event: "issues", action: "closed", repository: "acme/web" })).toEqual(["all"]);
  });

  it("counts a narrowing that throws as taking the delivery: the handler's run decides, the intake never fails", () => {
    expect(routeDelivery([broken], { event: "push", action: undefined, repository: "acme/web" }, config)).toEqual([
      broken,
    ]);
  });

  it("hands the narrowing the service's configuration (the built-in secrets handler: pushes of the admin repository only)", () => {
    const route = (repository: string, event = "push", action?: string) =>
      routeDelivery([secrets], { event, action, repository }, config).length;
    expect(route("acme/.github")).toBe(1);
    expect(route("acme/.GitHub")).toBe(1);
    expect(route("acme/web")).toBe(0);
    expect(route("acme/web", "pull_request", "opened")).toBe(0);
    expect(route("acme/.github", "pull_request", "opened")).toBe(1);
    expect(route("acme/.github", "pull_request", "labeled")).toBe(0);
    // A repository created anywhere gets its secrets.
    expect(route("acme/web", "repository", "created")).toBe(1);
    expect(
      routeDelivery(
        [secrets],
        { event: "push", action: undefined, repository: "acme/.github" },
        testConfig({ adminRepo: "other-org/.github" }),
      ).length,
    ).toBe(0);
  });
});

describe("engineTakes", () => {
  it("takes a push that may touch a policy file, whichever handlers take it, and no other delivery", () => {
    const plain = JSON.stringify(pushes[0]);
    expect(engineTakes({ event: "push", payload: plain })).toBe(false);
    expect(engineTakes({ event: "push", payload: JSON.stringify(touching(".github/steward.yml")) })).toBe(true);
    expect(engineTakes({ event: "issues", payload: JSON.stringify({ title: ".github/steward.yml" }) })).toBe(false);
  });
});
