import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fitMarkdown, planAnnotations } from "../../src/check-runs/limits.js";
import { createCheckReporter } from "../../src/check-runs/reporter.js";
import type { Annotation, CheckReport } from "../../src/check-runs/types.js";
import { startHubClient, type HubClient } from "../support/hub-client.js";

// The reporter against the sandbox hub's checks API, which enforces the API's limits (422).
let gh: HubClient;
let SHA: string;
let OTHER_SHA: string;
beforeEach(async () => {
  gh = await startHubClient();
  SHA = gh.hub.control.pushFiles({ owner: "acme", repo: "web", files: { "a.txt": "a\n" } }).sha;
  OTHER_SHA = gh.hub.control.pushFiles({ owner: "acme", repo: "web", files: { "b.txt": "b\n" } }).sha;
});
afterEach(() => gh.close());

type Run = {
  id: number;
  name: string;
  head_sha: string;
  status: string;
  conclusion: string | null;
  details_url: string;
  actions: unknown[];
  output: { title: string | null; summary: string | null; text: string | null };
  annotations: { message: string }[];
};
const runs = () => gh.hub.domains.checks.checkRuns({ owner: "acme", repo: "web" }) as unknown as Run[];
const sentWrites = () => gh.sent.filter((r) => r.method !== "GET");

const problems = (n: number): Annotation[] =>
  Array.from({ length: n }, (_, i) => ({
    path: ".github/steward.yml",
    start_line: i + 1,
    end_line: i + 1,
    start_column: 3,
    end_column: 9,
    annotation_level: "failure" as const,
    message: `problem ${i + 1}`,
  }));

const report = (over: Partial<CheckReport> = {}): CheckReport => ({
  owner: "acme",
  repo: "web",
  headSha: SHA,
  name: "steward/config",
  conclusion: "failure",
  title: "Problems",
  summary: "Some problems",
  ...over,
});

const writes = () =>
  sentWrites().map(
    (r) => `${r.method} ${r.status} ${r.body.output?.annotations?.length ?? 0} ${r.body.conclusion ?? r.body.status}`,
  );

describe("check reporter", () => {
  for (const [count, expected] of [
    [0, ["POST 201 0 failure"]],
    [1, ["POST 201 1 failure"]],
    [50, ["POST 201 50 failure"]],
    [51, ["POST 201 50 in_progress", "PATCH 200 1 failure"]],
    [200, ["POST 201 50 in_progress", "PATCH 200 50 in_progress", "PATCH 200 50 in_progress", "PATCH 200 50 failure"]],
  ] as const) {
    it(`sends ${count} annotations in batches of at most 50, concluding with the last`, async () => {
      const ref = await createCheckReporter(gh.octokit).report(report({ annotations: problems(count) }));
      expect(writes()).toEqual(expected);
      expect(runs()).toHaveLength(1);
      const run = runs()[0]!;
      expect(ref).toEqual({ id: run.id, html_url: expect.stringContaining(`/runs/${run.id}`) });
      expect(run).toMatchObject({ status: "completed", conclusion: "failure", name: "steward/config", head_sha: SHA });
      expect(run.annotations.map((a) => a.message)).toEqual(problems(count).map((a) => a.message));
    });
  }

  it("creates a check run at most once when the create's answer is lost: it finds the run the lost create made", async () => {
    // The create reaches GitHub and takes effect; the answer is lost on the way back.
    gh.hub.control.setFault("POST /repos/{owner}/{repo}/check-runs", { after: true, status: 500, times: 1 });
    const ref = await createCheckReporter(gh.octokit).report(report({ annotations: problems(51) }));
    expect(runs()).toHaveLength(1);
    expect(ref.id).toBe(runs()[0]!.id);
    // The client did not send the create again; the second batch went to the found run.
    expect(writes()).toEqual(["POST 500 50 in_progress", "PATCH 200 1 failure"]);
    expect(runs()[0]).toMatchObject({ status: "completed", conclusion: "failure" });
    expect(runs()[0]!.annotations).toHaveLength(51);
  });

  it("tries a create again when a 5xx came before it took effect", async () => {
    gh.hub.control.setFault("POST /repos/{owner}/{repo}/check-runs", { status: 502, times: 1 });
    await createCheckReporter(gh.octokit).report(report());
    expect(writes()).toEqual(["POST 502 0 failure", "POST 201 0 failure"]);
    expect(runs()).toHaveLength(1);
  });

  it("cuts an over-long summary, text and title with a visible note instead of failing", async () => {
    const summary = "| a | b |\n|---|---|\n" + "| row | " + "x".repeat(80) + " |\n".repeat(1);
    const huge = summary.repeat(2000);
    await createCheckReporter(gh.octokit, { detailsUrl: "https://steward.example/status" }).report(
      report({ title: "T".repeat(400), summary: huge, text: "y".repeat(70_000), conclusion: "success" }),
    );
    const run = runs()[0]!;
    expect(sentWrites().map((w) => w.status)).toEqual([201]);
    expect(run.output.title!.length).toBe(255);
    expect(run.output.title!.endsWith("…")).toBe(true);
    expect(run.output.summary!.length).toBeLessThanOrEqual(65_535);
    expect(run.output.summary).toContain("did not fit the 65535-character limit");
    expect(run.output.summary).toContain("https://steward.example/status");
    expect(run.output.summary!.startsWith(huge.slice(0, 60_000))).toBe(true);
    expect(run.output.text!.length).toBeLessThanOrEqual(65_535);
    expect(run.details_url).toBe("https://steward.example/status");
  });

  it("reuses the run of the same name and head SHA instead of piling up runs", async () => {
    const reporter = createCheckReporter(gh.octokit);
    for (let i = 0; i < 5; i++) await reporter.report(report({ annotations: problems(3) }));
    expect(runs()).toHaveLength(1);
    // Same annotations on the same run are not appended again.
    expect(runs()[0]!.annotations).toHaveLength(3);
    // Looked up once: the run this client made is known after that.
    const lookups = gh.sent.filter((r) => r.path.endsWith(`/commits/${SHA}/check-runs`));
    expect(lookups).toHaveLength(1);
    expect(
      lookups.every((r) => r.query.get("check_name") === "steward/config" && r.query.get("filter") === "latest"),
    ).toBe(true);
  });

  it("knows the run it made: no lookup before the next report, and the annotations it carries are planned from memory", async () => {
    const reporter = createCheckReporter(gh.octokit);
    await reporter.report(report({ conclusion: undefined, status: "in_progress", title: "Checking" }));
    const lookupsAfterFirst = gh.sent.filter((r) => r.path.endsWith("/check-runs") && r.method === "GET").length;
    expect(lookupsAfterFirst).toBe(1);
    // Another reporter on the same installation client (the next delivery) knows it too.
    await createCheckReporter(gh.octokit).report(report({ annotations: problems(3) }));
    await createCheckReporter(gh.octokit).report(report({ annotations: problems(4) }));
    expect(gh.sent.filter((r) => r.path.endsWith("/check-runs") && r.method === "GET")).toHaveLength(1);
    expect(gh.sent.filter((r) => r.path.includes("/annotations"))).toHaveLength(0);
    expect(runs()).toHaveLength(1);
    expect(runs()[0]!.annotations.map((a) => a.message)).toEqual(problems(4).map((a) => a.message));
    // Annotations that no longer apply: a new run, which is then the one known.
    await createCheckReporter(gh.octokit).report(report({ conclusion: "success", annotations: [] }));
    await createCheckReporter(gh.octokit).report(report({ conclusion: "success", title: "Fine" }));
    expect(runs()).toHaveLength(2);
    expect(runs()[1]).toMatchObject({ conclusion: "success", output: { title: "Fine" }, annotations: [] });
    expect(gh.sent.filter((r) => r.path.endsWith("/check-runs") && r.method === "GET")).toHaveLength(1);
  });

  it("forgets a run whose update failed: the next report looks it up again", async () => {
    const reporter = createCheckReporter(gh.octokit);
    await reporter.report(report({ conclusion: undefined, status: "in_progress", title: "Checking" }));
    gh.hub.control.setFault("/repos/{owner}/{repo}/check-runs/{check_run_id}", { status: 502, times: 1 });
    await expect(reporter.report(report())).rejects.toMatchObject({ status: 502 });
    await reporter.report(report());
    expect(gh.sent.filter((r) => r.path.endsWith(`/commits/${SHA}/check-runs`))).toHaveLength(2);
    expect(runs()).toHaveLength(1);
    expect(runs()[0]).toMatchObject({ status: "completed", conclusion: "failure" });
  });

  it("updates a reused run's conclusion and sends only annotations it lacks", async () => {
    const reporter = createCheckReporter(gh.octokit);
    await reporter.report(report({ conclusion: undefined, status: "in_progress", title: "Checking" }));
    await reporter.report(report({ annotations: problems(60) }));
    expect(runs()).toHaveLength(1);
    expect(runs()[0]!.annotations).toHaveLength(60);
    expect(runs()[0]).toMatchObject({ status: "completed", conclusion: "failure" });
  });

  it("starts a new run when the old one carries annotations that no longer apply", async () => {
    const reporter = createCheckReporter(gh.octokit);
    await reporter.report(report({ annotations: problems(2) }));
    await reporter.report(report({ conclusion: "success", annotations: [] }));
    expect(runs()).toHaveLength(2);
    expect(runs()[1]).toMatchObject({ conclusion: "success", annotations: [] });
  });

  it("creates one run when two deliveries report the same commit at once", async () => {
    // Separate reporters, as two deliveries get (pull_request.opened and check_suite.requested).
    await Promise.all([
      createCheckReporter(gh.octokit).report(report({ annotations: problems(60) })),
      createCheckReporter(gh.octokit).report(report({ annotations: problems(60) })),
      createCheckReporter(gh.octokit).report(report({ annotations: problems(60) })),
    ]);
    expect(runs()).toHaveLength(1);
    expect(runs()[0]!.annotations).toHaveLength(60);
  });

  it("keeps runs of other names and other SHAs apart", async () => {
    const reporter = createCheckReporter(gh.octokit);
    await reporter.report(report());
    await reporter.report(report({ name: "steward/rerun" }));
    await reporter.report(report({ headSha: OTHER_SHA }));
    expect(runs()).toHaveLength(3);
  });

  it("sends actions within limits and refuses malformed ones before any request", async () => {
    const reporter = createCheckReporter(gh.octokit);
    await reporter.report(
      report({
        actions: [
          {
            label: "Re-run the failed jobs now",
            description: "Ask Steward to re-run every failed job of this run",
            identifier: "rerun",
          },
        ],
      }),
    );
    expect(runs()[0]!.actions).toEqual([
      { label: "Re-run the failed j…", description: "Ask Steward to re-run every failed job …", identifier: "rerun" },
    ]);
    const before = gh.hub.control.requests().length;
    const four = Array.from({ length: 4 }, (_, i) => ({ label: "a", description: "b", identifier: `id${i}` }));
    await expect(reporter.report(report({ actions: four }))).rejects.toThrow(/at most 3/);
    await expect(
      reporter.report(report({ actions: [{ label: "a", description: "b", identifier: "x".repeat(21) }] })),
    ).rejects.toThrow(/identifier/);
    expect(gh.hub.control.requests().length).toBe(before);
  });

  it("fixes annotations the API would refuse", async () => {
    await createCheckReporter(gh.octokit).report(
      report({
        annotations: [
          {
            path: "a.yml",
            start_line: 0,
            end_line: 3,
            start_column: 2,
            end_column: 1,
            annotation_level: "failure",
            message: "",
          },
        ],
      }),
    );
    expect(sentWrites()[0]!.status).toBe(201);
    expect(sentWrites()[0]!.body.output.annotations).toEqual([
      { path: "a.yml", start_line: 1, end_line: 3, annotation_level: "failure", message: "(no message)" },
    ]);
    expect(runs()[0]!.annotations).toMatchObject([
      { path: "a.yml", start_line: 1, end_line: 3, annotation_level: "failure", message: "(no message)" },
    ]);
  });
});

describe("limits", () => {
  it("closes a code fence that the cut leaves open", () => {
    const md = "```yaml\n" + "a: 1\n".repeat(20_000) + "```\n";
    const out = fitMarkdown(md, undefined);
    expect(out.length).toBeLessThanOrEqual(65_535);
    expect((out.match(/^```/gm) ?? []).length % 2).toBe(0);
    expect(out).toContain("the annotations list every problem");
  });

  it("plans reuse only when the old annotations are a subset of the new", () => {
    const [a, b, c] = problems(3) as [Annotation, Annotation, Annotation];
    expect(planAnnotations([a, b], [a, b, c])).toEqual({ reuse: true, send: [c] });
    expect(planAnnotations([a, c], [a, b])).toEqual({ reuse: false, send: [a, b] });
    expect(planAnnotations([], [])).toEqual({ reuse: true, send: [] });
  });
});
