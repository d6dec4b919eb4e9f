// What one request sets on itself stays its own: the stop check of the work that made it (a
// stopped run's requests are refused) and a POST's "no retries". Neither may reach the requests
// other work makes later through the same Octokit, against the sandbox hub.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { loadConfig } from "../../src/config/env.js";
import { createOctokitFactory } from "../../src/api/client.js";
import { inProcessCoordination } from "../../src/coordination/in-process.js";
import { runWithSignal } from "../../src/lifecycle/abort-scope.js";
import type { InstallationOctokit } from "../../src/api/types.js";

let hub: HubHandle;
let dir: string;
let octokit: InstallationOctokit;
const repo = { owner: "acme", repo: "web" };

beforeAll(async () => {
  hub = await createHub();
  dir = await mkdtemp(join(tmpdir(), "steward-stop-scope-"));
  const config = loadConfig({ ...hub.env, PRIVATE_KEY: undefined, STEWARD_DATA_DIR: dir, LOG_LEVEL: "silent" });
  const octokits = createOctokitFactory({
    config,
    logger: pino({ level: "silent" }),
    coordination: inProcessCoordination(),
    writeIntervalMs: 0,
  });
  octokit = await octokits.octokitFor(hub.control.installation("acme")!.id);
});
afterAll(async () => {
  await hub?.close();
  await rm(dir, { recursive: true, force: true });
});

const getRepo = () => octokit.request("GET /repos/{owner}/{repo}", repo);
const repoReads = () =>
  hub.control
    .requests()
    .filter((r) => r.method === "GET" && r.path === "/repos/acme/web")
    .map((r) => r.status);

describe("a request's own settings", () => {
  it("refuses the requests of stopped work, and only of that work", async () => {
    const stopped = new AbortController();
    expect((await runWithSignal(stopped.signal, getRepo)).status).toBe(200);
    stopped.abort(new Error("lease lost"));
    await expect(runWithSignal(stopped.signal, getRepo)).rejects.toThrow("stopped: lease lost");
    const live = new AbortController();
    expect((await runWithSignal(live.signal, getRepo)).status).toBe(200);
    expect((await getRepo()).status).toBe(200);
  });

  it("a POST is not retried, and a GET after it still is", async () => {
    hub.control.setFault("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", { status: 502, times: 1 });
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
        ...repo,
        issue_number: 1,
        body: "hello",
      }),
    ).rejects.toMatchObject({ status: 502 });
    expect(hub.control.requests().filter((r) => r.method === "POST" && r.path.endsWith("/comments"))).toHaveLength(1);
    const before = repoReads().length;
    hub.control.setFault("GET /repos/{owner}/{repo}", { status: 502, times: 1 });
    expect((await getRepo()).status).toBe(200);
    expect(repoReads().slice(before)).toEqual([502, 200]);
  });
});
