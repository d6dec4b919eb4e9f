// Schema step 5 -> 6: the console's overview counts deliveries per minute and status over the
// last 30 minutes, and dead letters per repository. Read from `deliveries`, both grow with the
// traffic (a busy half hour is 100,000+ rows; an outage can leave as many dead letters), so a page
// could scan that many. Triggers keep the counts in two small tables as rows come, change status
// and go, whoever writes them (intake, worker, replay, purge, operator commands): the overview
// reads at most minutes x repositories x statuses rows, and the writers' code is unchanged.
import type { Database } from "better-sqlite3";

const minute = (row: "new" | "old") => `(${row}.received_at / 60000) * 60000`;
const repository = (row: "new" | "old") => `coalesce(${row}.repository, '')`;
const add = (row: "new" | "old", by: 1 | -1) =>
  `INSERT INTO delivery_minutes (minute, repository, status, count) VALUES (${minute(row)}, ${repository(row)}, ${row}.status, ${by})
     ON CONFLICT (minute, repository, status) DO UPDATE SET count = count + ${by};`;
const addDead = (row: "new" | "old", by: 1 | -1) =>
  `INSERT INTO dead_letters (repository, count) SELECT ${repository(row)}, ${by} WHERE ${row}.status = 'dead'
     ON CONFLICT (repository) DO UPDATE SET count = count + ${by};`;

const COUNTS = `
-- Deliveries by minute received (epoch ms, floored), repository ('' for none) and status.
CREATE TABLE IF NOT EXISTS delivery_minutes (
  minute INTEGER NOT NULL,
  repository TEXT NOT NULL,
  status TEXT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (minute, repository, status)
) WITHOUT ROWID;
-- Dead letters by repository ('' for none).
CREATE TABLE IF NOT EXISTS dead_letters (
  repository TEXT PRIMARY KEY,
  count INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS deliveries_count_insert AFTER INSERT ON deliveries BEGIN
  ${add("new", 1)}
END;
CREATE TRIGGER IF NOT EXISTS deliveries_count_status AFTER UPDATE OF status ON deliveries WHEN old.status IS NOT new.status BEGIN
  ${add("old", -1)}
  ${add("new", 1)}
END;
-- Purged rows: their minute's counts go down, and a minute of a repository left all zero goes.
CREATE TRIGGER IF NOT EXISTS deliveries_count_delete AFTER DELETE ON deliveries BEGIN
  ${add("old", -1)}
  DELETE FROM delivery_minutes WHERE minute = ${minute("old")} AND repository = ${repository("old")} AND count = 0;
END;
-- Dead letters are few and change rarely: these fire only when one comes or goes.
CREATE TRIGGER IF NOT EXISTS deliveries_dead_insert AFTER INSERT ON deliveries WHEN new.status = 'dead' BEGIN
  ${addDead("new", 1)}
END;
CREATE TRIGGER IF NOT EXISTS deliveries_dead_status AFTER UPDATE OF status ON deliveries WHEN (old.status = 'dead') <> (new.status = 'dead') BEGIN
  ${addDead("old", -1)}
  ${addDead("new", 1)}
END;
CREATE TRIGGER IF NOT EXISTS deliveries_dead_delete AFTER DELETE ON deliveries WHEN old.status = 'dead' BEGIN
  ${addDead("old", -1)}
END;
`;

/** Creates the count tables and their triggers and counts what the file already holds (idempotent). */
export function countDeliveries(db: Database): void {
  db.exec(COUNTS);
  db.exec(`
    DELETE FROM delivery_minutes;
    INSERT INTO delivery_minutes (minute, repository, status, count)
      SELECT (received_at / 60000) * 60000, coalesce(repository, ''), status, count(*) FROM deliveries GROUP BY 1, 2, 3;
    DELETE FROM dead_letters;
    INSERT INTO dead_letters (repository, count)
      SELECT coalesce(repository, ''), count(*) FROM deliveries WHERE status = 'dead' GROUP BY 1;
  `);
}
