// The store lock: serialises holders, and takes over at once from a holder that was killed.
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/store.js";
import { withStoreLock } from "../../src/coordination/lock.js";
import { processOwnerGone } from "../../src/lifecycle/process-owner.js";
import type { Store } from "../../src/store/types.js";
import { storeWith } from "../support/store-faults.js";

let dir: string;
let opened: SqliteStore;
let store: Store;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "steward-lock-"));
  opened = openSqliteStore(dir, { logger: pino({ level: "silent" }) });
  store = opened.kv;
});
afterEach(async () => {
  await opened.close();
  await rm(dir, { recursive: true, force: true });
});

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(r.stdout.toString());
}

describe("withStoreLock", () => {
  it("runs holders of one key one at a time, in order, and releases after each", async () => {
    const events: string[] = [];
    const hold = (name: string) =>
      withStoreLock(store, "k:lock", async () => {
        events.push(`${name} in`);
        await new Promise((r) => setTimeout(r, 20));
        events.push(`${name} out`);
        return name;
      });
    expect(await Promise.all([hold("a"), hold("b"), hold("c")])).toEqual(["a", "b", "c"]);
    expect(events).toEqual(["a in", "a out", "b in", "b out", "c in", "c out"]);
    expect(await store.get("k:lock")).toBeUndefined();
  });

  it("releases the lock when the work throws", async () => {
    await expect(withStoreLock(store, "k:lock", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await store.claim("k:lock")).toBe(true);
  });

  it("tries a release that failed again: the key's next holder gets the lock at once", async () => {
    // The real store, whose compare-and-replace fails the first time it is asked (a busy store).
    let failures = 1;
    const blinking = storeWith(store, {
      replaceIf: (...args) =>
        failures-- > 0 ? Promise.reject(new Error("database is locked")) : store.replaceIf(...args),
    });
    expect(await withStoreLock(blinking, "k:lock", async () => "first")).toBe("first");
    expect(await store.get("k:lock")).toBeUndefined();
    expect(await withStoreLock(store, "k:lock", async () => "next", { waitMs: 0 })).toBe("next");
  });

  it("says so when the release keeps failing, rather than returning as if the lock were free", async () => {
    const failing = storeWith(store, { replaceIf: () => Promise.reject(new Error("database is locked")) });
    await expect(withStoreLock(failing, "k:lock", async () => "done")).rejects.toThrow("database is locked");
  });

  it("takes a lock left by a killed process over at once", async () => {
    await store.claim("k:lock", { ttlMs: 60_000, value: { owner: `${hostname()}/${deadPid()}/earlier` } });
    expect(await withStoreLock(store, "k:lock", async () => "mine", { waitMs: 0 })).toBe("mine");
  });

  it("takes a lock left by an earlier incarnation with this very pid over at once", async () => {
    await store.claim("k:lock", {
      ttlMs: 60_000,
      value: { owner: `${hostname()}/${process.pid}/earlier-incarnation` },
    });
    expect(await withStoreLock(store, "k:lock", async () => "mine", { waitMs: 0 })).toBe("mine");
  });

  it("waits for a live holder and says which key stayed locked", async () => {
    const live = spawn(process.execPath, ["-e", "setTimeout(() => {}, 10000)"]);
    try {
      await store.claim("k:lock", { ttlMs: 60_000, value: { owner: `${hostname()}/${live.pid}/other` } });
      await expect(withStoreLock(store, "k:lock", async () => "never", { waitMs: 150 })).rejects.toThrow(
        "k:lock stayed locked for 0.15s",
      );
      expect(processOwnerGone(`${hostname()}/${live.pid}/other`)).toBe(false);
    } finally {
      live.kill("SIGKILL");
    }
  });

  it("never takes over from a holder on another host (it cannot tell whether that one is alive)", () => {
    expect(processOwnerGone(`another-host.example/${deadPid()}/x`)).toBe(false);
  });
});
