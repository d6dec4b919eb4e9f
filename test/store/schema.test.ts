// The SQLite store's own: its durability setting and its schema version. A store of the released
// versions 1 and 2 is migrated at open; a data directory written by any other layout (development builds
// wrote versions 1 to 13 without Steward's application id) is refused at open with a message
// saying what it is and what to do, and is left exactly as it was.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openSqliteStore, storeFileName, type SqliteStore } from "../../src/store/sqlite/store.js";
import { SCHEMA_VERSION, StoreSchemaError } from "../../src/store/sqlite/schema.js";
import { deliveryOf, examplePayload } from "../engine/helpers.js";

const openerFixture = join(import.meta.dirname, "fixtures", "open-sqlite-store.ts");

let dir: string;
let store: SqliteStore | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "steward-schema-"));
});
afterEach(async () => {
  await store?.close();
  store = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `sql` on the store file on a connection of its own and returns what `read` reads there. */
function onFile<T>(sql: string, read: (db: Database.Database) => T = () => undefined as T): T {
  const db = new Database(join(dir, storeFileName));
  try {
    db.exec(sql);
    return read(db);
  } finally {
    db.close();
  }
}

const header = (db: Database.Database) => ({
  version: db.pragma("user_version", { simple: true }),
  application: db.pragma("application_id", { simple: true }),
  tables: db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all(),
});

describe("sqlite durability", () => {
  it("keeps recorded deliveries across a reopen with power-loss durability", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    store = openSqliteStore(dir, { durability: "power" });
    expect(await store.deliveries.record(d)).toBe("recorded");
    await store.close();
    store = openSqliteStore(dir, { durability: "power" });
    expect((await store.deliveries.getDelivery(d.id))?.delivery.payload).toBe(d.payload);
    expect(await store.deliveries.record(d)).toBe("duplicate");
  });
});

describe("schema", () => {
  it("creates the current version in an empty directory, and opens it again as it is", async () => {
    store = openSqliteStore(dir);
    const d = deliveryOf("push", examplePayload("push"));
    await store.deliveries.record(d);
    await store.close();
    const created = onFile("", header);
    expect(created.version).toBe(SCHEMA_VERSION);
    expect(created.application).not.toBe(0);
    expect(created.tables).toEqual(
      expect.arrayContaining([
        "attempts",
        "audit",
        "dead_letters",
        "deliveries",
        "delivery_minutes",
        "kv",
        "outcomes",
        "payloads",
        "tasks",
      ]),
    );
    store = openSqliteStore(dir);
    expect((await store.deliveries.getDelivery(d.id))?.delivery.payload).toBe(d.payload);
  });

  it("deletes a purged delivery's payload, outcomes and runs with it: a delivery recorded after it, given the freed seq, starts with none", async () => {
    store = openSqliteStore(dir);
    const old = deliveryOf("issues", examplePayload("issues", "opened"));
    expect(await store.deliveries.record({ ...old, receivedAt: new Date(Date.now() - 60_000) })).toBe("recorded");
    const claimed = (await store.deliveries.claimDelivery(60_000))!;
    expect(
      await store.deliveries.recordOutcome(claimed.token, old.id, "labels", { status: "failed", error: "no" }, 0.1),
    ).toBe(true);
    expect(await store.deliveries.finishDelivery(claimed.token, old.id, { status: "done" })).toBe(true);
    expect(await store.deliveries.purgeFinished(new Date(Date.now() + 1_000))).toBe(1);
    const rows = () =>
      onFile("", (db) =>
        ["payloads", "outcomes", "attempts"].map((t) => db.prepare(`SELECT count(*) FROM ${t}`).pluck().get()),
      );
    expect(rows()).toEqual([0, 0, 0]);

    // The table is empty again, so the next delivery takes the purged one's seq.
    const next = deliveryOf("push", examplePayload("push"));
    expect(await store.deliveries.record(next)).toBe("recorded");
    const run = (await store.deliveries.claimDelivery(60_000))!;
    expect(run.delivery.id).toBe(next.id);
    expect(run.outcomes).toEqual([]);
    expect((await store.deliveries.getDelivery(next.id))?.attempts).toEqual([]);
    expect(await store.browse.decisionsOf([next.id])).toEqual(new Map());
  });

  it("refuses a store a development build wrote (schema 13), saying what it is and what to do, and leaves it as it was", () => {
    onFile(
      "CREATE TABLE deliveries (id TEXT PRIMARY KEY); CREATE TABLE spool_moved (id INTEGER PRIMARY KEY); PRAGMA user_version = 13;",
    );
    const before = onFile("", header);
    let refusal: unknown;
    try {
      store = openSqliteStore(dir);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(StoreSchemaError);
    const message = (refusal as Error).message;
    expect(message).toContain(
      `STEWARD_DATA_DIR (${dir}) holds a store written by a development build of Steward (schema 13)`,
    );
    expect(message).toContain(`this version reads schema ${SCHEMA_VERSION}`);
    expect(message).toContain("point STEWARD_DATA_DIR at an empty directory");
    expect(message).toContain("steward backup");
    expect(onFile("", header)).toEqual(before);
  });

  it("refuses a development build's schema 1, which shares the number but not the layout", () => {
    onFile("CREATE TABLE deliveries (id TEXT PRIMARY KEY); PRAGMA user_version = 1;");
    expect(() => (store = openSqliteStore(dir))).toThrow(/development build of Steward \(schema 1\)/);
  });

  it("refuses a store a newer Steward wrote", () => {
    store = openSqliteStore(dir);
    void store.close();
    store = undefined;
    onFile(`PRAGMA user_version = ${SCHEMA_VERSION + 1};`);
    expect(() => (store = openSqliteStore(dir))).toThrow(
      `written by a newer Steward (schema ${SCHEMA_VERSION + 1}); this version reads schema ${SCHEMA_VERSION}. Run the newer version`,
    );
  });

  it("refuses a SQLite file that is not a Steward store", () => {
    onFile("CREATE TABLE notes (body TEXT);");
    expect(() => (store = openSqliteStore(dir))).toThrow(/not a Steward store/);
    expect(onFile("", header).tables).toEqual(["notes"]);
  });

  it("releases the service lock when it refuses, so the directory is not left held", () => {
    onFile("CREATE TABLE deliveries (id TEXT PRIMARY KEY); PRAGMA user_version = 13;");
    expect(() => (store = openSqliteStore(dir, { serviceLock: true }))).toThrow(StoreSchemaError);
    rmSync(join(dir, storeFileName));
    store = openSqliteStore(dir, { serviceLock: true });
  });
});

// The released layouts a store is migrated from at open: version 1 (headers and payload in the
// delivery's row) and version 2 (in a table of their own, every table keyed by the delivery's id).
const RELEASED = {
  1: [
    `INSERT INTO deliveries (id, event, action, installation_id, repository, received_at, status,
      attempts, next_run_at, lease_token, lease_until, last_error, updated_at, headers, payload)
    VALUES (@id, @event, @action, @installationId, @repository, @receivedAt, @status, @attempts, @receivedAt, NULL,
      NULL, @lastError, @receivedAt, @headers, @payload)`,
  ],
  2: [
    `INSERT INTO deliveries (id, event, action, installation_id, repository, received_at, status,
      attempts, next_run_at, lease_token, lease_until, last_error, updated_at)
    VALUES (@id, @event, @action, @installationId, @repository, @receivedAt, @status, @attempts, @receivedAt, NULL,
      NULL, @lastError, @receivedAt)`,
    "INSERT INTO payloads (id, headers, payload) VALUES (@id, @headers, @payload)",
  ],
};

describe.each([1, 2] as const)("schema version %i", (version) => {
  const layout = readFileSync(new URL(`fixtures/sqlite-schema-${version}.sql`, import.meta.url), "utf8");
  const ONE_HOUR = 3_600_000;

  /** A store of this released version holding `rows` (delivery, status), each done or dead delivery with an outcome and a run. */
  function writeReleased(rows: [ReturnType<typeof deliveryOf>, string][], receivedAt: number): void {
    onFile(layout, (db) => {
      const inserts = RELEASED[version].map((sql) => db.prepare(sql));
      for (const [d, status] of rows) {
        const row = {
          id: d.id,
          event: d.event,
          action: d.action ?? null,
          installationId: d.installationId ?? null,
          repository: d.repository ?? null,
          receivedAt,
          status,
          attempts: status === "queued" ? 0 : 1,
          lastError: status === "dead" ? "gave up" : null,
          headers: JSON.stringify(d.headers),
          payload: d.payload,
        };
        for (const insert of inserts) insert.run(row);
        if (status === "queued") continue;
        const outcome = status === "dead" ? "failed" : "done";
        db.prepare(
          "INSERT INTO outcomes (delivery_id, handler, status, detail, retryable, attempts, seconds, updated_at) VALUES (?, 'labels', ?, 'why', 0, 1, 0.5, ?)",
        ).run(d.id, outcome, receivedAt);
        db.prepare(
          "INSERT INTO attempts (delivery_id, handler, attempt, status, detail, at) VALUES (?, 'labels', 1, ?, 'why', ?)",
        ).run(d.id, outcome, receivedAt);
      }
    });
  }

  /** Ids of the deliveries whose payload the file holds. */
  const payloadIds = (db: Database.Database) =>
    db.prepare("SELECT d.id FROM payloads p JOIN deliveries d ON d.seq = p.delivery ORDER BY d.id").pluck().all();

  it("is migrated at open: every delivery keeps its headers, payload, status, outcomes and runs", async () => {
    const done = deliveryOf("push", examplePayload("push"));
    const dead = deliveryOf("issues", examplePayload("issues", "opened"));
    const queued = deliveryOf("pull_request", examplePayload("pull_request", "opened"));
    const receivedAt = Date.now() - 2 * ONE_HOUR;
    writeReleased(
      [
        [done, "done"],
        [dead, "dead"],
        [queued, "queued"],
      ],
      receivedAt,
    );
    const rowids = onFile("", (db) => db.prepare("SELECT id, rowid FROM deliveries ORDER BY rowid").raw().all());

    store = openSqliteStore(dir);
    const after = onFile("", (db) => ({
      ...header(db),
      columns: db.prepare("SELECT name FROM pragma_table_info('deliveries')").pluck().all(),
      check: db.pragma("integrity_check", { simple: true }),
      seqs: db.prepare("SELECT id, seq FROM deliveries ORDER BY seq").raw().all(),
    }));
    expect(after.version).toBe(SCHEMA_VERSION);
    expect(after.tables).toContain("payloads");
    expect(after.columns).not.toContain("payload");
    expect(after.columns).not.toContain("headers");
    expect(after.check).toBe("ok");
    // A delivery keeps its rowid as its seq: the console's page positions (received_at, seq) still hold.
    expect(after.seqs).toEqual(rowids);

    for (const [d, status] of [
      [done, "done"],
      [dead, "dead"],
      [queued, "queued"],
    ] as const) {
      const read = await store.deliveries.getDelivery(d.id);
      expect(read?.delivery).toMatchObject({
        id: d.id,
        event: d.event,
        headers: d.headers,
        payload: d.payload,
        status,
      });
      expect(read?.outcomes.map((o) => o.status)).toEqual(
        status === "queued" ? [] : [status === "dead" ? "failed" : "done"],
      );
      expect(read?.attempts.length).toBe(status === "queued" ? 0 : 1);
    }
    expect(await store.browse.countDead()).toBe(1);
    expect((await store.browse.browseDeliveries({ outcome: "failed", limit: 50 })).items.map((s) => s.id)).toEqual([
      dead.id,
    ]);
    expect((await store.browse.decisionsOf([dead.id, done.id])).get(dead.id)).toEqual([
      expect.objectContaining({ handler: "labels", status: "failed" }),
    ]);
    expect((await store.deliveries.listDeliveries()).map((d) => d.payload).sort()).toEqual(
      [done.payload, dead.payload, queued.payload].sort(),
    );

    // The queued one is claimed and run from the new layout; the done one is purged with its payload.
    const claimed = await store.deliveries.claimDelivery(60_000);
    expect(claimed?.delivery).toMatchObject({ id: queued.id, headers: queued.headers });
    expect(claimed?.delivery.payload).toBe(queued.payload);
    expect(await store.deliveries.finishDelivery(claimed!.token, queued.id, { status: "done" })).toBe(true);
    expect(await store.deliveries.purgeFinished(new Date(receivedAt + ONE_HOUR))).toBe(1);
    await store.close();
    store = undefined;
    expect(onFile("", payloadIds)).toEqual([dead.id, queued.id].sort());
    expect(onFile("", (db) => db.prepare("SELECT count(*) FROM outcomes").pluck().get())).toBe(1);

    // Opened again, it is the current version as it is.
    store = openSqliteStore(dir);
    expect((await store.deliveries.getDelivery(queued.id))?.delivery).toMatchObject({
      status: "done",
      payload: queued.payload,
    });
  });

  it("is migrated once when several processes open it at the same moment, each then reading every delivery", async () => {
    const rows = Array.from({ length: 300 }, (_, i) => [
      deliveryOf("push", examplePayload("push"), `v${version}-${i}`),
      i % 3 === 0 ? "queued" : "done",
    ]) as [ReturnType<typeof deliveryOf>, string][];
    writeReleased(rows, Date.now() - ONE_HOUR);
    // Each process loads first and opens the store when all are ready, so that they open it together.
    const children = [1, 2, 3, 4].map(() => {
      const child = spawn(process.execPath, ["--import", "tsx", openerFixture, dir], {
        cwd: join(import.meta.dirname, "..", ".."),
        stdio: ["pipe", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      const ready = new Promise<void>((resolve) =>
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          if (out.startsWith("ready\n")) resolve();
        }),
      );
      child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
      const exited = new Promise<{ code: number | null; out: string; err: string }>((resolve) =>
        child.on("exit", (code) => resolve({ code, out: out.slice("ready\n".length), err })),
      );
      return { child, ready, exited };
    });
    await Promise.all(children.map((c) => c.ready));
    for (const { child } of children) child.stdin.end("go\n");
    const opened = await Promise.all(children.map((c) => c.exited));
    const expected = Object.fromEntries(rows.map(([d]) => [d.id, d.payload.length]));
    for (const { code, out, err } of opened) {
      expect(err).toBe("");
      expect(code).toBe(0);
      expect(JSON.parse(out)).toEqual({ version: SCHEMA_VERSION, payloads: expected });
    }
    const after = onFile("", (db) => ({
      payloads: db.prepare("SELECT count(*) FROM payloads").pluck().get(),
      check: db.pragma("integrity_check", { simple: true }),
    }));
    expect(after).toEqual({ payloads: rows.length, check: "ok" });
  }, 60_000);

  it("is read as it is by a second store opening it after the migration", async () => {
    const d = deliveryOf("push", examplePayload("push"));
    writeReleased([[d, "done"]], Date.now());
    store = openSqliteStore(dir);
    const second = openSqliteStore(dir);
    try {
      expect((await second.deliveries.getDelivery(d.id))?.delivery.payload).toBe(d.payload);
    } finally {
      await second.close();
    }
    expect(onFile("", (db) => db.prepare("SELECT count(*) FROM payloads").pluck().get())).toBe(1);
  });
});
