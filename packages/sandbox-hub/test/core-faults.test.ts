import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HubHandle } from "../src/hub.js";
import { installationToken, startHub, tokenOctokit } from "./core-helpers.js";

describe("hub faults and control surface", () => {
  let hub: HubHandle;
  let token: string;
  beforeAll(async () => {
    hub = await startHub({ randomSeed: 42 });
    token = await installationToken(hub, hub.control.installation("acme")!.id);
  });
  afterAll(() => hub.close());
  afterEach(() => hub.control.clearFaults());

  const getRepo = () =>
    tokenOctokit(hub, token)
      .request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })
      .then(
        (r) => r.status,
        (e: { status?: number }) => e.status ?? 0,
      );

  it("answers a route's configured error status, for a limited number of times", async () => {
    hub.control.setFault("GET /repos/{owner}/{repo}", { status: 502, times: 2 });
    expect([await getRepo(), await getRepo(), await getRepo()]).toEqual([502, 502, 200]);
  });

  it("answers a configured message with the status, as GitHub's refusals carry one", async () => {
    hub.control.setFault("GET /repos/{owner}/{repo}", {
      status: 403,
      message: "This workflow is already running",
      times: 1,
    });
    const res = await fetch(`${hub.url}/repos/acme/web`, { headers: { Authorization: `token ${token}` } });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ message: "This workflow is already running", status: "403" });
    expect(await getRepo()).toBe(200);
  });

  it("applies an error rate deterministically for a seed", async () => {
    const pattern = async (seed: number) => {
      const h = await startHub({ randomSeed: seed });
      try {
        const t = await installationToken(h, h.control.installation("acme")!.id);
        h.control.setFault("/repos/acme/*", { errorRate: 0.5 });
        const out: number[] = [];
        for (let i = 0; i < 12; i++)
          out.push(
            await tokenOctokit(h, t)
              .request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" })
              .then(
                (r) => r.status,
                (e: { status: number }) => e.status,
              ),
          );
        return out;
      } finally {
        await h.close();
      }
    };
    const a = await pattern(7);
    expect(await pattern(7)).toEqual(a);
    expect(a).toContain(500);
    expect(a).toContain(200);
  });

  it("drops connections without an answer", async () => {
    hub.control.setFault("/repos/acme/web", { drop: true, times: 1 });
    await expect(
      fetch(`${hub.url}/repos/acme/web`, { headers: { Authorization: `token ${token}` } }),
    ).rejects.toThrow();
    expect(await getRepo()).toBe(200);
  });

  it("loses the answer of a write after the route ran: the change stands although the client saw a dropped connection", async () => {
    const octokit = tokenOctokit(hub, token);
    const sha = hub.control.pushFiles({ owner: "acme", repo: "web", files: { "after.txt": "lost answer\n" } }).sha;
    const create = () =>
      octokit.request("POST /repos/{owner}/{repo}/check-runs", {
        owner: "acme",
        repo: "web",
        name: "lost-answer",
        head_sha: sha,
      });
    const listed = async () =>
      (
        await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
          owner: "acme",
          repo: "web",
          ref: sha,
          check_name: "lost-answer",
          filter: "all",
        })
      ).data.total_count;
    const from = hub.control.requests().length;

    hub.control.setFault("POST /repos/{owner}/{repo}/check-runs", { after: true, times: 1 });
    await expect(create()).rejects.toThrow();
    // The client saw nothing, yet the check run exists, and the hub recorded a dropped answer.
    expect(await listed()).toBe(1);
    const posts = hub.control
      .requests()
      .slice(from)
      .filter((r) => r.method === "POST" && r.path === "/repos/acme/web/check-runs");
    expect(posts.map((r) => r.status)).toEqual([0]);

    // With a status, the client sees that error instead of the 201; the change stands too.
    hub.control.setFault("POST /repos/{owner}/{repo}/check-runs", { after: true, status: 502, times: 1 });
    await expect(create()).rejects.toMatchObject({ status: 502 });
    expect(await listed()).toBe(2);

    // `times: 1` used each rule up: the next create answers normally.
    expect((await create()).status).toBe(201);
    expect(await listed()).toBe(3);
  });

  it("adds latency to matching routes only", async () => {
    hub.control.setFault("GET /repos/{owner}/{repo}", { latencyMs: 300 });
    const order: string[] = [];
    const slow = getRepo().then((s) => order.push(`repo ${s}`));
    const fast = tokenOctokit(hub, token)
      .request("GET /installation/repositories")
      .then((r) => order.push(`list ${r.status}`));
    await Promise.all([slow, fast]);
    expect(order).toEqual(["list 200", "repo 200"]);
  });

  it("drives the hub over HTTP under /_sandbox/", async () => {
    const call = (fn: string, body: unknown) =>
      fetch(`${hub.url}/_sandbox/control/${fn}`, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "Content-Type": "application/json" },
      });
    const pushed = await call("pushFiles", { owner: "acme", repo: "web", files: { "http.txt": "via http\n" } });
    expect(pushed.status).toBe(200);
    const { result } = (await pushed.json()) as { result: { sha: string } };
    const file = await tokenOctokit(hub, token).request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: "acme",
      repo: "web",
      path: "http.txt",
      ref: result.sha,
      mediaType: { format: "raw" },
    });
    expect(file.data).toBe("via http\n");
    expect((await call("setClock", { args: ["2030-01-02T03:04:05Z"] })).status).toBe(200);
    expect(await (await fetch(`${hub.url}/_sandbox/clock`)).json()).toEqual({ now: "2030-01-02T03:04:05Z" });
    hub.control.setClock(new Date());
    expect((await call("noSuchThing", {})).status).toBe(404);
    expect((await call("createRepo", { owner: "nobody", name: "x" })).status).toBe(422);
    const requests = (await (await fetch(`${hub.url}/_sandbox/requests`)).json()) as {
      path: string;
      authorization: boolean;
      auth: string;
    }[];
    const seen = requests.find((r) => r.path === "/repos/acme/web/contents/http.txt")!;
    expect(seen).toMatchObject({ authorization: true, auth: "installation" });
    expect(requests.some((r) => r.path.startsWith("/_sandbox/control"))).toBe(false);
  });

  it("serves short-lived URLs without credentials and expires them", async () => {
    const url = hub.hub.signedUrl("log line\n", 60_000);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("log line\n");
    hub.control.advanceClock(61_000);
    expect((await fetch(url)).status).toBe(403);
    hub.control.advanceClock(-61_000);
  });
});
