// The replica harness's view of a PostgreSQL deployment (test/support/replicas-harness.ts): a
// schema of its own, where the write slot's holder is read, the registry, and every row of
// every table as text (to look for tokens in it). One connection, kept open: the slot's holder
// is looked up again and again while a write lasts milliseconds.
import pg from "pg";
import type { ReplicaEntry } from "../../src/coordination/replicas.js";
import type { ReplicaBackend } from "../support/replicas-harness.js";

export function postgresBackend(url: string, schema: string): ReplicaBackend {
  const q = `"${schema}"`;
  let client: Promise<pg.Client> | undefined;
  // (Re)connected on demand: a restart of the server ends the connection.
  const connection = async (): Promise<pg.Client> => {
    const open = (client ??= (async () => {
      const c = new pg.Client({ connectionString: url });
      c.on("error", () => (client = undefined));
      c.on("end", () => (client = undefined));
      await c.connect();
      return c;
    })());
    try {
      return await open;
    } catch (e) {
      if (client === open) client = undefined;
      throw e;
    }
  };
  const query = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
    (await (await connection()).query<R>(text, values)).rows;
  return {
    env: { STEWARD_POSTGRES_URL: url, STEWARD_TEST_POSTGRES_SCHEMA: schema },
    slotHolder: async (installation) =>
      (
        await query<{ holder: string | null }>(`SELECT holder FROM ${q}.write_slots WHERE installation = $1`, [
          installation,
        ])
      )[0]?.holder ?? undefined,
    registry: async () =>
      (await query<{ entry: string }>(`SELECT entry FROM ${q}.replicas WHERE seen_at > now() - interval '5 s'`)).map(
        (r) => JSON.parse(r.entry) as ReplicaEntry,
      ),
    async dump() {
      const tables = await query<{ name: string }>(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1",
        [schema],
      );
      const parts: string[] = [];
      for (const { name } of tables) parts.push(name, JSON.stringify(await query(`SELECT * FROM ${q}."${name}"`)));
      return parts.join("\n");
    },
    recorded: async () => new Set((await query<{ id: string }>(`SELECT id FROM ${q}.deliveries`)).map((r) => r.id)),
    async close() {
      const open = client;
      client = undefined;
      await (await open?.catch(() => undefined))?.end().catch(() => undefined);
    },
  };
}
