import { Webhooks } from "@octokit/webhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HubHandle } from "../src/hub.js";
import { installationToken, probotFor, startHub, startReceiver, tokenOctokit } from "./core-helpers.js";

const verify = (secret: string, body: string, signature: string) => new Webhooks({ secret }).verify(body, signature);

describe("hub contents, pull requests and webhooks", () => {
  let hub: HubHandle;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let token: string;
  let answer = 202;
  beforeAll(async () => {
    receiver = await startReceiver(() => answer);
    hub = await startHub({ webhookUrl: receiver.url, webhookSecret: "It's a Secret to Everybody" });
    token = await installationToken(hub, hub.control.installation("acme")!.id);
    await hub.control.settled();
  });
  afterAll(async () => {
    await hub.close();
    await receiver.close();
  });
  afterEach(() => {
    answer = 202;
    hub.control.setWebhookUrl(receiver.url, { contentType: "json" });
  });

  it("serves files per ref as JSON (base64) and raw, and directories as lists", async () => {
    const octokit = tokenOctokit(hub, token);
    const before = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: "acme",
      repo: "api",
      path: "main.go",
    });
    const { sha } = hub.control.pushFiles({
      owner: "acme",
      repo: "api",
      branch: "feature",
      files: { "main.go": "package main // v2\n" },
    });
    const file = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: "acme",
      repo: "api",
      path: "main.go",
      ref: "feature",
    });
    if (Array.isArray(file.data) || file.data.type !== "file") throw new Error("expected a file");
    expect(file.data.encoding).toBe("base64");
    expect(Buffer.from(file.data.content, "base64").toString()).toBe("package main // v2\n");
    expect(file.data.sha).not.toBe((before.data as { sha: string }).sha);
    expect(file.data.download_url).toContain("/_sandbox/raw/");
    const bySha = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: "acme",
      repo: "api",
      path: "main.go",
      ref: sha,
      mediaType: { format: "raw" },
    });
    expect(bySha.data).toBe("package main // v2\n");
    expect(bySha.headers["x-github-media-type"]).toBe("github.v3; param=raw");
    const main = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: "acme",
      repo: "api",
      path: "main.go",
      mediaType: { format: "raw" },
    });
    expect(main.data).toBe("package main\n\nfunc main() {}\n");
    const dir = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: "acme",
      repo: "api",
      path: ".github",
    });
    expect(dir.data).toEqual([expect.objectContaining({ name: "workflows", type: "dir", path: ".github/workflows" })]);
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/contents/{path}", { owner: "acme", repo: "api", path: "nope.txt" }),
    ).rejects.toMatchObject({ status: 404 });
    const branch = await octokit.request("GET /repos/{owner}/{repo}/branches/{branch}", {
      owner: "acme",
      repo: "api",
      branch: "feature",
    });
    expect(branch.data.commit.sha).toBe(sha);
    const ref = await octokit.request("GET /repos/{owner}/{repo}/git/ref/{ref}", {
      owner: "acme",
      repo: "api",
      ref: "heads/feature",
    });
    expect(ref.data.object.sha).toBe(sha);
  });

  it("delivers a signed push with commits added/modified/removed, verifiable with the app's secret", async () => {
    const start = receiver.received.length;
    const { sha } = hub.control.pushFiles({
      owner: "acme",
      repo: "web",
      files: { "docs/new.md": "new\n", "package.json": "{}\n", "src/index.js": null },
    });
    const [delivery] = await hub.control.waitForDeliveries(
      (d) => d.event === "push" && (d.payload as { after?: string }).after === sha,
    );
    const got = receiver.received.slice(start).find((r) => r.headers["x-github-delivery"] === delivery!.guid)!;
    expect(got.headers["x-github-event"]).toBe("push");
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["user-agent"]).toMatch(/^GitHub-Hookshot\//);
    expect(got.headers["x-github-hook-installation-target-type"]).toBe("integration");
    expect(await verify("It's a Secret to Everybody", got.body, String(got.headers["x-hub-signature-256"]))).toBe(true);
    expect(await verify("another secret", got.body, String(got.headers["x-hub-signature-256"]))).toBe(false);
    const payload = JSON.parse(got.body);
    expect(payload.ref).toBe("refs/heads/main");
    expect(payload.after).toBe(sha);
    expect(payload.before).toMatch(/^[0-9a-f]{40}$/);
    expect(payload.installation.id).toBe(hub.control.installation("acme")!.id);
    expect(payload.commits[0]).toMatchObject({
      id: sha,
      added: ["docs/new.md"],
      modified: ["package.json"],
      removed: ["src/index.js"],
    });
    expect(delivery!.status_code).toBe(202);
  });

  it("sends form-encoded deliveries when the app's webhook config says form", async () => {
    const app = await probotFor(hub).auth();
    await app.request("PATCH /app/hook/config", { content_type: "form" });
    const start = receiver.received.length;
    const { sha } = hub.control.pushFiles({ owner: "acme", repo: "web", files: { "form.txt": "x\n" } });
    await hub.control.waitForDeliveries((d) => (d.payload as { after?: string }).after === sha);
    const got = receiver.received.slice(start).find((r) => r.headers["x-github-event"] === "push")!;
    expect(got.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(await verify("It's a Secret to Everybody", got.body, String(got.headers["x-hub-signature-256"]))).toBe(true);
    expect(JSON.parse(new URLSearchParams(got.body).get("payload")!).after).toBe(sha);
  });

  it("opens pull requests (also from forks), lists changed files and synchronizes on push", async () => {
    const octokit = tokenOctokit(hub, token);
    const pr = hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "topic",
      files: { "a.txt": "a\n", "package.json": '{"x":1}\n' },
    });
    const opened = await hub.control.waitForDeliveries(
      (d) =>
        d.event === "pull_request" && d.action === "opened" && (d.payload as { number: number }).number === pr.number,
    );
    expect((opened[0]!.payload as { pull_request: { head: { sha: string } } }).pull_request.head.sha).toBe(pr.head_sha);
    const files = await octokit.paginate("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      owner: "acme",
      repo: "web",
      pull_number: pr.number,
      per_page: 1,
    });
    expect(files.map((f) => [f.filename, f.status])).toEqual([
      ["a.txt", "added"],
      ["package.json", "modified"],
    ]);
    const { sha } = hub.control.pushToPullRequest({
      owner: "acme",
      repo: "web",
      number: pr.number,
      files: { "a.txt": null },
    });
    await hub.control.waitForDeliveries(
      (d) => d.action === "synchronize" && (d.payload as { after?: string }).after === sha,
    );
    const after = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      owner: "acme",
      repo: "web",
      pull_number: pr.number,
    });
    expect(after.data.map((f) => f.filename)).toEqual(["package.json"]);

    const fork = hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "patch-1",
      fromFork: true,
      files: { "README.md": "# fork\n" },
    });
    const got = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      owner: "acme",
      repo: "web",
      pull_number: fork.number,
    });
    expect(got.data.head.repo?.fork).toBe(true);
    expect(got.data.head.repo?.full_name).toBe("contributor/web");
    expect(got.data.base.repo.full_name).toBe("acme/web");
    expect(got.data.head.sha).toBe(fork.head_sha);
  });

  it("records deliveries, lists them with a cursor and redelivers on request", async () => {
    answer = 500;
    const { sha } = hub.control.pushFiles({ owner: "acme", repo: "web", files: { "fail.txt": "1\n" } });
    const [failed] = await hub.control.waitForDeliveries((d) => (d.payload as { after?: string }).after === sha);
    expect(failed!.status_code).toBe(500);
    answer = 202;
    const app = await probotFor(hub).auth();
    const first = await app.request("GET /app/hook/deliveries", { per_page: 2 });
    expect(first.data).toHaveLength(2);
    expect(first.headers.link).toMatch(/cursor=\d+.*rel="next"/);
    const all = await app.paginate("GET /app/hook/deliveries", { per_page: 2 });
    expect(all.length).toBe(hub.control.deliveries().length);
    const one = await app.request("GET /app/hook/deliveries/{delivery_id}", { delivery_id: failed!.id });
    expect(one.data.status_code).toBe(500);
    expect(one.data.request.headers?.["X-GitHub-Event"]).toBe("push");
    const attempt = await app.request("POST /app/hook/deliveries/{delivery_id}/attempts", { delivery_id: failed!.id });
    expect(attempt.status).toBe(202);
    const [again] = await hub.control.waitForDeliveries((d) => d.guid === failed!.guid && d.redelivery);
    expect(again!.status_code).toBe(202);
    expect(again!.id).not.toBe(failed!.id);
  });

  it("sends nothing for a suspended installation", async () => {
    const inst = hub.control.installation("acme")!;
    hub.control.suspend(inst.id);
    await hub.control.settled();
    const before = hub.control.deliveries().length;
    hub.control.pushFiles({ owner: "acme", repo: "web", files: { "quiet.txt": "1\n" } });
    await hub.control.settled();
    expect(hub.control.deliveries().length).toBe(before);
    hub.control.unsuspend(inst.id);
    await hub.control.settled();
  });
});
