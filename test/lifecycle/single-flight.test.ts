// One sync of an organisation at a time across the service, the CLI and replicas: a lease in
// the shared store. `steward sync` says who holds it, waits with --wait, takes it with --force
// (the holder is told through its signal); it shows progress and the plan's time estimate.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import type { CommandIo } from "../../src/cli/io.js";
import { createHub, type HubHandle } from "../../src/sandbox/hub.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/store.js";
import { withJobLease } from "../../src/coordination/job-lease.js";
import { syncLeaseKey } from "../../handlers/secrets/organisation.js";
import { syncIo } from "../handlers/secrets/sync-io.js";
import { until } from "./support.js";

const run = (args: string[], io: CommandIo) => main(["sync", ...args], io);

let h: HubHandle;
let dataDir: string;
let store: SqliteStore;

const io = () =>
  syncIo(h, dataDir, {
    STEWARD_WRITE_INTERVAL: "0ms",
    STEWARD_SF_TOKEN: "single-flight-value",
    STEWARD_SECRET_SOURCES: "acme=env:STEWARD_SF_",
  });

beforeAll(async () => {
  h = await createHub({ seed: "demo" });
  dataDir = await mkdtemp(join(tmpdir(), "steward-single-flight-"));
  process.env.STEWARD_SF_TOKEN = "single-flight-value";
  process.env.STEWARD_SECRET_SOURCES = "acme=env:STEWARD_SF_";
  h.control.pushFiles({
    owner: "acme",
    repo: ".github",
    files: {
      ".github/steward/secrets.yml": "secrets:\n  SF_TOKEN: { from: env:STEWARD_SF_TOKEN, repositories: [api, web] }\n",
    },
  });
  store = openSqliteStore(dataDir);
});
afterAll(async () => {
  store?.close();
  await h?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** Holds the organisation's sync lease as the service does while `during` runs; resolves with the lease's signal. */
async function whileServiceSyncs(during: (lost: AbortSignal) => Promise<void>): Promise<AbortSignal> {
  let seen!: AbortSignal;
  // A 5 s lease, renewed every ~1.7 s: a stall of this process on a loaded machine must not let it
  // lapse (the CLI would then take the sync without --force).
  await withJobLease(
    store.kv,
    syncLeaseKey("acme"),
    "the sync of acme",
    "the Steward service",
    async (signal) => {
      seen = signal;
      await during(signal);
    },
    { ttlMs: 5_000 },
  );
  return seen;
}

describe("single-flight sync", () => {
  it("the plan prints how long applying it takes at GitHub's write pace", async () => {
    const dry = io();
    expect(await run(["--org", "acme", "--dry-run"], dry)).toBe(0);
    expect(dry.stdout).toContain(
      "Applying it makes 2 writes: about 2 s at GitHub's pace of about one write per second.",
    );
  });

  it("says who holds the sync and exits 1; --force takes it over and the holder is told", async () => {
    const lost = await whileServiceSyncs(async (signal) => {
      const second = io();
      expect(await run(["--org", "acme"], second)).toBe(1);
      expect(second.stderr).toContain(`the sync of acme is already running: the Steward service, pid ${process.pid}`);
      expect(second.stderr).toContain("--force");
      expect(h.control.requests().filter((r) => r.method === "PUT")).toEqual([]);

      const forced = io();
      expect(await run(["--org", "acme", "--force"], forced)).toBe(0);
      expect(forced.stdout).toContain("applied: 2 created");
      // Progress on stderr, plain lines when not a terminal.
      expect(forced.stderr).toMatch(/^acme: \d+\/\d+ repositories, 2\/2 writes, 0 errors/m);
      await until(
        () => signal.aborted,
        "the holder to be told",
        () => "",
        20,
      );
    });
    expect(lost.aborted).toBe(true);
    expect(String((lost.reason as Error).message)).toMatch(/lease (taken by steward sync \(CLI\)|expired)/);
  });

  it("--wait waits for the holder to finish, then runs", async () => {
    const waiting = io();
    let result: Promise<number> | undefined;
    await whileServiceSyncs(async () => {
      result = run(["--org", "acme", "--wait"], waiting);
      await until(
        () => waiting.stderr.includes("waiting for the sync of acme already running (the Steward service"),
        "the wait message",
        () => waiting.stderr,
        20,
      );
    });
    expect(await result).toBe(0);
    expect(waiting.stdout).toContain("applied: 0 created, 0 updated, 0 deleted");
  });
});
