// The request log tells what a client sent without keeping credentials: whether it authorised,
// its User-Agent and the media type it asked for.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HubHandle } from "../src/hub.js";
import { installationToken, startHub } from "./core-helpers.js";

describe("request log", () => {
  let hub: HubHandle;
  let token: string;
  beforeAll(async () => {
    hub = await startHub();
    token = await installationToken(hub, hub.control.installation("acme")!.id);
  });
  afterAll(() => hub.close());

  it("records Accept and User-Agent, and only whether Authorization was sent", async () => {
    const from = hub.control.requests().length;
    await fetch(`${hub.url}/repos/acme/api`, {
      headers: {
        Authorization: `token ${token}`,
        Accept: "application/vnd.github.raw+json",
        "User-Agent": "probe/1.0",
      },
    });
    await fetch(`${hub.url}/repos/acme/web`);
    const [withAuth, without] = hub.control.requests().slice(from);
    expect(withAuth).toMatchObject({
      path: "/repos/acme/api",
      status: 200,
      auth: "installation",
      authorization: true,
      accept: "application/vnd.github.raw+json",
      userAgent: "probe/1.0",
    });
    expect(without).toMatchObject({ path: "/repos/acme/web", auth: "none", authorization: false });
    expect(JSON.stringify(hub.control.requests())).not.toContain(token);
  });

  it("stamps arrival on the process's monotonic clock as well, for sub-millisecond latencies", async () => {
    const from = hub.control.requests().length;
    const before = performance.now();
    await fetch(`${hub.url}/repos/acme/web`, { headers: { Authorization: `token ${token}` } });
    await fetch(`${hub.url}/repos/acme/api`, { headers: { Authorization: `token ${token}` } });
    const after = performance.now();
    const [first, second] = hub.control.requests().slice(from);
    expect(first!.receivedAtHr).toBeGreaterThanOrEqual(before);
    expect(second!.receivedAtHr).toBeGreaterThan(first!.receivedAtHr);
    expect(second!.receivedAtHr).toBeLessThanOrEqual(after);
  });
});
