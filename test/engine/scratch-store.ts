// A SQLite store in a scratch data directory for each test, and the engine a test started over it:
// the engine stopped, the store closed and the directory removed after the test.
import { afterEach, beforeEach } from "vitest";
import type { Engine } from "../../src/engine/index.js";
import { openSqliteStore, type SqliteStore, type SqliteStoreOptions } from "../../src/store/sqlite/store.js";
import { tempDir } from "./helpers.js";

export interface ScratchStore {
  readonly dir: string;
  readonly store: SqliteStore;
  /** Opens the directory's store again (after the test closed it: a restart). */
  reopen(opts?: SqliteStoreOptions): SqliteStore;
  /** The engine under test, if one was started: stopped after the test. */
  engine: Engine | undefined;
}

export function sqliteStorePerTest(): ScratchStore {
  let dir = "";
  let store: SqliteStore | undefined;
  let cleanup: () => Promise<void> = async () => {};
  const scratch: ScratchStore = {
    get dir() {
      return dir;
    },
    get store() {
      return store!;
    },
    reopen: (opts) => (store = openSqliteStore(dir, opts)),
    engine: undefined,
  };
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    store = openSqliteStore(dir);
  });
  afterEach(async () => {
    await scratch.engine?.stop(1000);
    scratch.engine = undefined;
    store?.close();
    store = undefined;
    await cleanup();
  });
  return scratch;
}
