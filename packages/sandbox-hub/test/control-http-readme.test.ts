// Every control function the README documents ("Control from TypeScript") is callable over HTTP
// at `POST /_sandbox/control/{fn}` on a running hub: the list is read from the README itself, so a
// function documented there but left out of the HTTP surface answers 404 here.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HubHandle } from "../src/hub.js";
import { startHub, startReceiver } from "./core-helpers.js";

/** The names in the first column of the README's "Control from TypeScript" table. */
function documentedControlFunctions(): string[] {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const section = readme.split("### Control from TypeScript")[1]!.split("\n### ")[0]!;
  const names: string[] = [];
  for (const line of section.split("\n")) {
    const cells = line.split(/(?<!\\)\|/);
    if (cells.length < 3 || /^\s*(Function|---)/.test(cells[1]!)) continue;
    for (const [, code] of cells[1]!.matchAll(/`([^`]+)`/g)) {
      const name = /^([A-Za-z]+)/.exec(code!)?.[1];
      if (name && !names.includes(name)) names.push(name);
    }
  }
  return names;
}

describe("the sandbox hub's control surface over HTTP", () => {
  let hub: HubHandle;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    [hub, receiver] = await Promise.all([startHub(), startReceiver()]);
  });
  afterAll(async () => {
    await Promise.all([hub.close(), receiver.close()]);
  });

  const post = async (fn: string, body?: unknown) => {
    const res = await fetch(`${hub.url}/_sandbox/control/${fn}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as { result?: unknown; message?: string } };
  };

  it("answers every function the README lists (none 404), each doing what it says", async () => {
    const documented = documentedControlFunctions();
    // The README's table: a parse that found nothing would make this test pass vacuously.
    expect(documented.length).toBeGreaterThan(25);
    expect(documented).toEqual(expect.arrayContaining(["openIssue", "commentOnIssue", "mergePullRequest"]));

    const ctx: Record<string, unknown> = {};
    const installationId = hub.control.installation("acme")!.id;
    // A call for each function, in an order where later ones use what earlier ones made.
    const script: [string, () => unknown][] = [
      // Deliveries are recorded once they go somewhere.
      ["setWebhookUrl", () => ({ args: [receiver.url] })],
      ["webhookUrl", () => undefined],
      ["createOrg", () => ({ args: ["readme-org", { members: ["readme-member"], owners: ["readme-owner"] }] })],
      ["createUser", () => ({ args: ["readme-user", { orgs: ["readme-org"] }] })],
      ["userToken", () => ({ args: ["readme-user"] })],
      ["createRepo", () => ({ owner: "readme-org", name: "tour", files: { "a.txt": "a\n" } })],
      ["restrictRepo", () => ({ args: ["readme-org", "tour", ["readme-member"]] })],
      ["renameRepo", () => ({ args: ["readme-org", "tour", "tour2"] })],
      ["setRepoVisibility", () => ({ args: ["readme-org", "tour2", "private"] })],
      ["install", () => ({ args: ["readme-org", { repositories: "all" }] })],
      ["installation", () => ({ args: ["readme-org"] })],
      ["suspend", () => ({ args: [(ctx.install as { id: number }).id] })],
      ["unsuspend", () => ({ args: [(ctx.install as { id: number }).id] })],
      ["pushFiles", () => ({ owner: "acme", repo: "web", files: { "tour.txt": "tour\n" } })],
      [
        "openPullRequest",
        () => ({ owner: "acme", repo: "web", head: "tour", files: { "pr.txt": "pr\n" }, title: "Tour" }),
      ],
      ["pushToPullRequest", () => ({ owner: "acme", repo: "web", number: pr(), files: { "pr.txt": "pr 2\n" } })],
      ["openIssue", () => ({ owner: "acme", repo: "web", title: "Over HTTP", body: "from the README's list" })],
      [
        "commentOnIssue",
        () => ({ owner: "acme", repo: "web", number: (ctx.openIssue as { number: number }).number, body: "a comment" }),
      ],
      ["enqueuePullRequest", () => ({ owner: "acme", repo: "web", number: pr() })],
      ["destroyMergeGroup", () => ({ args: [ctx.enqueuePullRequest, "dequeued"] })],
      ["mergePullRequest", () => ({ owner: "acme", repo: "web", number: pr() })],
      [
        "closePullRequest",
        () => {
          const opened = hub.control.openPullRequest({
            owner: "acme",
            repo: "web",
            head: "tour-close",
            files: { "c.txt": "c\n" },
          });
          return { owner: "acme", repo: "web", number: opened.number };
        },
      ],
      ["setClock", () => ({ args: [new Date().toISOString()] })],
      ["advanceClock", () => ({ args: [1_000] })],
      ["now", () => undefined],
      ["setRateLimit", () => ({ args: [installationId, { limit: 5000, remaining: 4000 }] })],
      ["setSecondaryLimit", () => ({ args: [null] })],
      ["enforceDocumentedLimits", () => ({ args: [null] })],
      ["setLoginAttempts", () => ({ reset: true })],
      ["setFault", () => ({ args: ["GET /never/{x}", { status: 502, times: 1 }] })],
      ["clearFaults", () => undefined],
      ["settled", () => undefined],
      ["deliveries", () => undefined],
      ["waitForDeliveries", () => ({ args: [{ event: "issues", action: "opened" }, { timeoutMs: 10_000 }] })],
      ["requests", () => undefined],
      ["effect", () => ({ args: ["tour.visited", { by: "control" }] })],
      ["effects", () => undefined],
    ];
    const pr = () => (ctx.openPullRequest as { number: number }).number;
    const scripted = script.map(([fn]) => fn);
    // A function documented later needs a line above; it fails here until it has one.
    expect(scripted).toEqual(expect.arrayContaining(documented));

    const answers: Record<string, number> = {};
    for (const [fn, body] of script) {
      const { status, body: answer } = await post(fn, body());
      answers[fn] = status;
      if (status === 200) ctx[fn] = answer.result;
      else ctx[fn] = answer.message;
    }
    const failed = Object.entries(answers).filter(([, s]) => s !== 200);
    expect(failed, JSON.stringify(Object.fromEntries(failed.map(([fn]) => [fn, ctx[fn]])))).toEqual([]);

    // What the issue-facing functions did, seen through the same surface.
    const issue = ctx.openIssue as { number: number };
    expect(issue.number).toBeGreaterThan(0);
    expect(ctx.commentOnIssue).toMatchObject({ id: expect.any(Number) });
    expect(ctx.mergePullRequest).toMatchObject({ sha: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const waited = ctx.waitForDeliveries as { event: string; action: string; payload: { issue: { number: number } } }[];
    expect(waited.map((d) => d.payload.issue.number)).toContain(issue.number);
    const events = (ctx.deliveries as { event: string; action: string | null }[]).map((d) => `${d.event}.${d.action}`);
    expect(events).toEqual(expect.arrayContaining(["issues.opened", "issue_comment.created", "pull_request.closed"]));
    expect((ctx.effects as { kind: string }[]).map((e) => e.kind)).toContain("tour.visited");
    expect(ctx.webhookUrl).toBe(receiver.url);
  });

  it("still refuses what is not a control function", async () => {
    expect((await post("requireInstallation", { args: [1] })).status).toBe(404);
    expect((await post("constructor")).status).toBe(404);
    expect((await post("noSuchThing")).status).toBe(404);
  });
});
