// `steward backup`: a copy of a running service's data directory that, restored into a new
// directory, starts and holds every delivery recorded before the backup began, payloads included.
import { describe, expect, it } from "vitest";
import { cp, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SCHEMA_VERSION } from "../../src/store/sqlite/schema.js";
import { examples } from "../support/webhook-examples.js";
import { deliveryId, postDelivery } from "../service/helpers.js";
import { realAppEnv, startChild } from "../service/child.js";
import { perTest } from "../service/per-test.js";

const byName = (name: string) =>
  (examples as { name: string; examples: unknown[] }[]).find((e) => e.name === name)!.examples;
/** Deliveries no handler takes (recorded done) and ones a handler takes (queued and run). */
const bodies = [JSON.stringify(byName("ping")[0]), JSON.stringify(byName("workflow_run")[0])];
const events = ["ping", "workflow_run"];

const scope = perTest();
const start = (env: Record<string, string>, args?: string[]) =>
  scope.stopAfter(startChild(env, args), (run) => run.proc.exitCode === null && run.proc.kill("SIGKILL"));

/** A CLI run: its exit code, all it printed, and its stdout alone (what --json parses; a runtime may warn on stderr). */
async function cli(
  env: Record<string, string>,
  args: string[],
): Promise<{ code: number | null; out: string; stdout: string }> {
  const run = start(env, args);
  let stdout = "";
  run.proc.stdout!.on("data", (d) => (stdout += d.toString()));
  const code = await run.exited;
  return { code, out: run.out(), stdout };
}

describe("steward backup", () => {
  it("copies a running store; the copy, restored into a new directory, starts with every delivery and payload", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("backup");
    const secret = "backup-webhook-secret";
    const env: Record<string, string> = {
      ...(await realAppEnv(hub, dir, secret)),
      STEWARD_SHUTDOWN_TIMEOUT: "5s",
      LOG_LEVEL: "info",
    };
    const service = start(env);
    const url = await service.listening;
    const sent = new Map<string, string>();
    const post = async (i: number) => {
      const id = deliveryId();
      const res = await postDelivery(url, { body: bodies[i % 2]!, secret, event: events[i % 2]!, id });
      expect(res.status).toBe(202);
      sent.set(id, bodies[i % 2]!);
    };
    for (let i = 0; i < 60; i++) await post(i);
    const before = new Set(sent.keys());

    // Deliveries keep arriving while the backup runs.
    const backupDir = join(dir, "backups", "nightly");
    const backup = cli({ STEWARD_DATA_DIR: env.STEWARD_DATA_DIR! }, ["backup", backupDir]);
    let more = 0;
    const during = (async () => {
      for (; more < 40; more++) await post(60 + more);
    })();
    const made = await backup;
    await during;
    expect(made.code, made.out).toBe(0);
    expect(made.stdout).toMatch(
      new RegExp(`^backed up \\d+ deliveries \\(schema ${SCHEMA_VERSION}, [\\d.]+ MB\\) from `),
    );
    expect(await readdir(backupDir)).toContain("steward.db");
    // A second backup to the same place is refused rather than mixed into the first.
    const again = await cli({ STEWARD_DATA_DIR: env.STEWARD_DATA_DIR! }, ["backup", backupDir]);
    expect(again.code).toBe(1);
    expect(again.out).toContain("already exists");

    service.proc.kill("SIGTERM");
    expect(await service.exited).toBe(0);

    // Restore: a new directory holding a copy of the backup, and Steward started on it.
    const restored = join(dir, "restored");
    await mkdir(restored);
    await cp(backupDir, restored, { recursive: true });
    const restarted = start({ ...env, STEWARD_DATA_DIR: restored });
    const url2 = await restarted.listening;
    expect((await fetch(`${url2}/readyz`)).status).toBe(200);

    const listed = await cli({ STEWARD_DATA_DIR: restored }, ["deliveries", "list", "--limit", "1000", "--json"]);
    expect(listed.code, listed.out).toBe(0);
    const ids = new Set((JSON.parse(listed.stdout) as { id: string }[]).map((d) => d.id));
    for (const id of before) expect(ids.has(id), `delivery ${id} recorded before the backup`).toBe(true);
    // Those that arrived during it are in the copy or not, never half (every listed one is one we sent).
    for (const id of ids) expect(sent.has(id)).toBe(true);
    // Payloads of both kinds (recorded done and queued), first and last: each CLI run is a process.
    const sample = [...before].slice(0, 2).concat([...ids].slice(0, 2));
    for (const id of sample) {
      const shown = await cli({ STEWARD_DATA_DIR: restored }, ["deliveries", "show", id, "--payload", "--json"]);
      expect(shown.code, shown.out).toBe(0);
      const payload = (JSON.parse(shown.stdout) as { delivery: { payload: unknown } }).delivery.payload;
      expect(typeof payload === "string" ? JSON.parse(payload) : payload).toEqual(JSON.parse(sent.get(id)!));
    }
    restarted.proc.kill("SIGTERM");
    expect(await restarted.exited).toBe(0);
  }, 180_000);

  it("refuses without a store, with Redis, and without DEST", async () => {
    const dir = await scope.dataDir("backup-none");
    const none = await cli({ STEWARD_DATA_DIR: join(dir, "empty") }, ["backup", join(dir, "out")]);
    expect(none.code).toBe(1);
    expect(none.out).toContain("no store in");
    const redis = await cli({ STEWARD_DATA_DIR: dir, STEWARD_REDIS_URL: "redis://127.0.0.1:6379/0" }, [
      "backup",
      join(dir, "out"),
    ]);
    expect(redis.code).toBe(2);
    expect(redis.out).toContain("back up Redis itself");
    // A store a development build wrote: only the version that wrote it copies it whole.
    const old = join(dir, "old");
    await mkdir(old);
    const db = new Database(join(old, "steward.db"));
    db.exec("CREATE TABLE deliveries (id TEXT PRIMARY KEY); PRAGMA user_version = 13;");
    db.close();
    const refused = await cli({ STEWARD_DATA_DIR: old }, ["backup", join(dir, "out")]);
    expect(refused.code).toBe(1);
    expect(refused.out).toContain("written by a development build of Steward (schema 13)");
    const missing = await cli({ STEWARD_DATA_DIR: dir }, ["backup"]);
    expect(missing.code).toBe(2);
    expect(missing.out).toContain("DEST is required");
  });
});
