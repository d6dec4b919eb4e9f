// The SQLite store's own: its durability setting and its one schema version. A data directory
// written by any other layout (development builds wrote versions 1 to 13) is refused at open
// with a message saying what it is and what to do, and is left exactly as it was.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openSqliteStore, storeFileName, type SqliteStore } from "../../src/store/sqlite/store.js";
import { SCHEMA_VERSION, StoreSchemaError } from "../../src/store/sqlite/schema.js";
import { deliveryOf, examplePayload } from "../engine/helpers.js";

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
  it("creates version 1 in an empty directory, and opens it again as it is", async () => {
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
        "tasks",
      ]),
    );
    store = openSqliteStore(dir);
    expect((await store.deliveries.getDelivery(d.id))?.delivery.payload).toBe(d.payload);
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
    onFile("PRAGMA user_version = 2;");
    expect(() => (store = openSqliteStore(dir))).toThrow(
      /written by a newer Steward \(schema 2\); this version reads schema 1\. Run the newer version/,
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
