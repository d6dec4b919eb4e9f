// GitHub's documented secondary limits, enforced per credential when a test turns them on: points a
// minute (a write costs five reads), content-creating requests a minute and an hour, and requests
// under way at once. Each answers 403 with a Retry-After that the sandbox clock honours.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { HubHandle } from "../src/hub.js";
import { installationToken, startHub, tokenOctokit } from "./core-helpers.js";

let hub: HubHandle;
let octokit: ReturnType<typeof tokenOctokit>;
beforeEach(async () => {
  hub = await startHub();
  octokit = tokenOctokit(hub, await installationToken(hub, hub.control.installation("acme")!.id));
});
afterEach(() => hub.close());

const outcome = (p: Promise<{ status: number }>) =>
  p.then(
    (r) => ({ status: r.status, retryAfter: undefined as string | undefined }),
    (e: { status: number; response?: { headers: Record<string, string>; data: { message?: string } } }) => ({
      status: e.status,
      retryAfter: e.response?.headers["retry-after"],
      message: e.response?.data.message,
    }),
  );
const read = () => outcome(octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" }));
const create = (title: string) =>
  outcome(octokit.request("POST /repos/{owner}/{repo}/issues", { owner: "acme", repo: "web", title }));
const refusals = () => hub.control.requests().filter((r) => r.status === 403);

describe("documented secondary limits", () => {
  it("are off unless turned on", async () => {
    for (let i = 0; i < 20; i++) expect((await create(`issue ${i}`)).status).toBe(201);
  });

  it("counts points a minute, a write as five reads, and lets requests through again when the minute has passed", async () => {
    hub.control.enforceDocumentedLimits({ pointsPerMinute: 12 });
    expect((await create("one")).status).toBe(201);
    expect((await create("two")).status).toBe(201);
    expect((await read()).status).toBe(200);
    expect((await read()).status).toBe(200);
    const refused = await read();
    expect(refused).toMatchObject({ status: 403, message: expect.stringMatching(/secondary rate limit/) });
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(60);
    expect(hub.control.effects.some((e) => e.kind === "hub.secondary-limit")).toBe(true);
    hub.control.advanceClock(Number(refused.retryAfter) * 1000);
    expect((await read()).status).toBe(200);
  });

  it("counts content-creating requests a minute and an hour", async () => {
    hub.control.enforceDocumentedLimits({ creatingPerMinute: 3, creatingPerHour: 5 });
    for (const t of ["a", "b", "c"]) expect((await create(t)).status).toBe(201);
    const minute = await create("d");
    expect(minute.status).toBe(403);
    expect(Number(minute.retryAfter)).toBeLessThanOrEqual(60);
    // Reads are not content-creating.
    expect((await read()).status).toBe(200);
    hub.control.advanceClock(61_000);
    for (const t of ["d", "e"]) expect((await create(t)).status).toBe(201);
    hub.control.advanceClock(61_000);
    const hour = await create("f");
    expect(hour.status).toBe(403);
    // The hour's first creation (122 s of sandbox time ago) frees the next one when it is an hour old.
    expect(Number(hour.retryAfter)).toBeGreaterThan(3600 - 130);
    expect(Number(hour.retryAfter)).toBeLessThanOrEqual(3600 - 120);
  });

  it("refuses a request over the concurrent limit while others are under way", async () => {
    hub.control.enforceDocumentedLimits({ concurrent: 2 });
    hub.control.setFault("/repos/{owner}/{repo}", { latencyMs: 1500 });
    const results = await Promise.all([read(), read(), read()]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 403]);
    hub.control.clearFaults();
    // Those answered are no longer under way.
    expect((await Promise.all([read(), read()])).map((r) => r.status)).toEqual([200, 200]);
    expect(refusals()).toHaveLength(1);
  });

  it("keeps each credential's spending apart", async () => {
    hub.control.enforceDocumentedLimits({ creatingPerMinute: 1 });
    expect((await create("mine")).status).toBe(201);
    expect((await create("again")).status).toBe(403);
    // Another token of the same installation spends the same installation's allowance.
    const again = tokenOctokit(hub, await installationToken(hub, hub.control.installation("acme")!.id));
    const sameInstallation = await outcome(
      again.request("POST /repos/{owner}/{repo}/issues", { owner: "acme", repo: "web", title: "x" }),
    );
    expect(sameInstallation.status).toBe(403);
    // A user is another credential with its own.
    hub.control.createUser("someone", { orgs: ["acme"] });
    const user = tokenOctokit(hub, hub.control.userToken("someone"));
    expect((await outcome(user.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web" }))).status).toBe(200);
  });
});
