import { describe, expect, it } from "vitest";
import { startHub } from "./core-helpers.js";
import { worldPerFile } from "./domain-helpers.js";

// GitHub answers a log request with a 302 to a storage host on another origin; a client must
// not carry its token there. The hub's storage host is a listener of its own to show that.
describe("hub log storage on a second origin", () => {
  let jobId: number;
  const world = worldPerFile(async (w) => {
    const run = w.hub.domains.actions.startRun({
      owner: "acme",
      repo: "web",
      workflow: "CI",
      jobs: [{ name: "test", steps: ["Run"] }],
    });
    jobId = w.hub.domains.actions.failJob({ runId: run.id, job: "test", step: "Run", log: "Error: disk full\n" }).id;
    await w.settle();
  });
  const hub = () => world().hub;
  const auth = () => ({ Authorization: `token ${world().token}` });

  const logUrl = () => `${hub().url}/repos/acme/web/actions/jobs/${jobId}/logs`;
  const storageRequests = () =>
    hub()
      .control.requests()
      .filter((r) => r.origin === hub().blobUrl);

  it("redirects a log request to the storage origin, which serves it without credentials", async () => {
    expect(new URL(hub().blobUrl).origin).not.toBe(new URL(hub().url).origin);
    const before = storageRequests().length;
    const res = await fetch(logUrl(), { headers: auth(), redirect: "manual" });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get("location")!);
    expect(location.origin).toBe(hub().blobUrl);
    expect(location.searchParams.get("sig")).toMatch(/^[0-9a-f]+$/);

    const log = await fetch(location);
    expect(log.status).toBe(200);
    expect(log.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await log.text()).toMatch(/Z Error: disk full\n/);
    expect(
      storageRequests()
        .slice(before)
        .map((r) => [r.method, r.path, r.status, r.authorization]),
    ).toEqual([["GET", location.pathname, 200, false]]);
    // The API's own origin serves no stored documents.
    expect((await fetch(`${hub().url}${location.pathname}${location.search}`)).status).toBe(404);
  });

  it("is another origin to a client that follows the redirect: the Authorization header stays behind", async () => {
    const before = storageRequests().length;
    const res = await fetch(logUrl(), { headers: auth() });
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/Z Error: disk full\n/);
    const api = hub()
      .control.requests()
      .filter((r) => r.origin === hub().url && r.path === `/repos/acme/web/actions/jobs/${jobId}/logs`)
      .at(-1);
    expect(api).toMatchObject({ status: 302, authorization: true, auth: "installation" });
    expect(
      storageRequests()
        .slice(before)
        .map((r) => [r.status, r.authorization]),
    ).toEqual([[200, false]]);
  });

  it("takes only faults that name its paths: an API-wide fault leaves the storage host alone", async () => {
    const location = async () =>
      (await fetch(logUrl(), { headers: auth(), redirect: "manual" })).headers.get("location")!;
    try {
      hub().control.setFault("**", { status: 502 });
      expect((await fetch(logUrl(), { headers: auth(), redirect: "manual" })).status).toBe(502);
      hub().control.clearFaults();
      const url = await location();
      hub().control.setFault("**", { status: 502 });
      expect((await fetch(url)).status).toBe(200);
      hub().control.setFault("/_sandbox/blobs/**", { status: 503, times: 1 });
      expect((await fetch(url)).status).toBe(503);
      expect((await fetch(url)).status).toBe(200);
    } finally {
      hub().control.clearFaults();
    }
  });

  it("expires a stored document and serves nothing but stored documents", async () => {
    const res = await fetch(logUrl(), { headers: auth(), redirect: "manual" });
    const location = res.headers.get("location")!;
    hub().control.advanceClock(61_000);
    try {
      expect((await fetch(location)).status).toBe(403);
    } finally {
      hub().control.advanceClock(-61_000);
    }
    expect((await fetch(`${hub().blobUrl}/_sandbox/blobs/no-such-token`)).status).toBe(404);
    expect((await fetch(`${hub().blobUrl}/repos/acme/web`, { headers: auth() })).status).toBe(404);
  });

  it("closes both listeners on close", async () => {
    const other = await startHub();
    await other.close();
    await expect(fetch(`${other.url}/`)).rejects.toThrow();
    await expect(fetch(`${other.blobUrl}/_sandbox/blobs/x`)).rejects.toThrow();
  });
});
