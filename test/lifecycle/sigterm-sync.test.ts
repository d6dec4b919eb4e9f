// SIGTERM in the middle of a secrets sync of hundreds of repositories: `steward start` as a
// child process against the sandbox hub. It must exit within its shutdown bound, send nothing
// once it logged "shut down", and the sync resumed by the next start must finish without
// writing anything twice.
import { afterEach, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { STEWARD_PERMISSIONS } from "../../src/sandbox/hub.js";
import { startChild } from "../service/child.js";
import { until } from "./support.js";

const ORG = "acme";
const ADMIN = "admin";
const REPOS = Array.from({ length: 200 }, (_, i) => `repo-${String(i).padStart(3, "0")}`);
const SHUTDOWN_TIMEOUT_MS = 2_000;
/** Start-up and exit of a Node process on a loaded machine; far below the minutes of the defect. */
const EXIT_MARGIN_MS = 15_000;

let hub: HubHandle | undefined;
let dir: string | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  children.length = 0;
  await hub?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  hub = dir = undefined;
});

const secretPut = /^\/repos\/acme\/(repo-\d{3})\/actions\/secrets\/NPM_TOKEN$/;

function secretWrites(h: HubHandle): { repo: string; at: number }[] {
  return h.control
    .requests()
    .filter((r) => r.method === "PUT" && r.status < 300 && secretPut.test(r.path))
    .map((r) => ({ repo: secretPut.exec(r.path)![1]!, at: r.at }));
}

/** The time of the JSON log line with message `msg`. */
function logTime(out: string, msg: string): number | undefined {
  for (const line of out.split("\n")) {
    if (!line.startsWith("{")) continue;
    const entry = JSON.parse(line) as { msg?: string; time?: number };
    if (entry.msg === msg) return entry.time;
  }
  return undefined;
}

describe("stop means stop (secrets sync, SIGTERM, resume)", () => {
  it("exits within the shutdown bound, sends nothing after 'shut down', and the resumed sync writes each secret once", async () => {
    hub = await createHub({ seed: "empty" });
    const h = hub;
    h.control.createOrg(ORG, { members: ["octo-admin"] });
    h.control.createRepo({ owner: ORG, name: ADMIN, private: true });
    for (const name of REPOS) h.control.createRepo({ owner: ORG, name });
    h.control.install(ORG, { permissions: STEWARD_PERMISSIONS, repositories: "all" });
    dir = await mkdtemp(join(tmpdir(), "steward-sigterm-"));
    const env = {
      APP_ID: h.env.APP_ID,
      PRIVATE_KEY_PATH: h.env.PRIVATE_KEY_PATH,
      WEBHOOK_SECRET: h.env.WEBHOOK_SECRET,
      GITHUB_API_URL: h.env.GITHUB_API_URL,
      PORT: "0",
      HOST: "127.0.0.1",
      STEWARD_DATA_DIR: join(dir, "data"),
      STEWARD_ADMIN_REPO: ADMIN,
      STEWARD_SHUTDOWN_TIMEOUT: `${SHUTDOWN_TIMEOUT_MS}ms`,
      // Write pacing makes the sync long enough to stop in the middle (GitHub's is 1 s).
      STEWARD_WRITE_INTERVAL: "40ms",
      STEWARD_SECRET_NPM_TOKEN: "npm-token-value-for-sigterm",
      // What the operator exposes to the organisation's secrets policy.
      STEWARD_SECRET_SOURCES: `${ORG}=env:STEWARD_SECRET_`,
      LOG_LEVEL: "info",
    };

    const first = startChild(env);
    children.push(first.proc);
    const url = await first.listening;
    h.control.setWebhookUrl(`${url}/api/github/webhooks`);
    h.control.pushFiles({
      owner: ORG,
      repo: ADMIN,
      files: {
        ".github/steward/secrets.yml":
          "secrets:\n  NPM_TOKEN: { from: env:STEWARD_SECRET_NPM_TOKEN, repositories: ['repo-*'] }\n",
      },
      message: "policy",
    });
    await until(() => secretWrites(h).length >= 20, "the sync to be under way", first.out, 100);

    const signalledAt = Date.now();
    first.proc.kill("SIGTERM");
    const code = await first.exited;
    const exitedAt = Date.now();
    expect(code, first.out()).toBe(0);
    expect(exitedAt - signalledAt).toBeLessThan(SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS);
    const shutDownAt = logTime(first.out(), "shut down");
    expect(shutDownAt, first.out()).toBeDefined();
    const written = secretWrites(h);
    expect(written.length).toBeLessThan(REPOS.length); // it was stopped in the middle
    expect(written.filter((w) => w.at > shutDownAt!)).toEqual([]);
    expect(h.control.requests().filter((r) => r.at > shutDownAt!)).toEqual([]);
    expect(first.out()).not.toMatch(/store is closed|database is not open/i);

    // The next start resumes the sync from where it stopped.
    h.control.setWebhookUrl(undefined);
    const second = startChild({ ...env, STEWARD_WRITE_INTERVAL: "0ms" });
    children.push(second.proc);
    await second.listening;
    await until(
      () => new Set(secretWrites(h).map((w) => w.repo)).size === REPOS.length,
      "every repository to have its secret",
      second.out,
      100,
    );
    await until(
      () => /secrets sync progress: .*\(|"msg":"secrets sync"/.test(second.out()),
      "the resumed sync to finish",
      second.out,
      100,
    );
    const perRepo = new Map<string, number>();
    for (const w of secretWrites(h)) perRepo.set(w.repo, (perRepo.get(w.repo) ?? 0) + 1);
    expect([...perRepo.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    expect(perRepo.size).toBe(REPOS.length);
    second.proc.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  }, 180_000);
});
