// What replicas on one PostgreSQL share beyond the store: the API client's coordination (the
// write slot of each installation, installation tokens sealed and minted once per installation
// for the whole deployment), and the registry of live replicas and what each holds (/metrics).
// Locks, job leases and single-flight syncs need nothing here: they are rows of the store's
// handler state (coordination/lock.ts, job-lease.ts), which this database already holds.
//
// Its own small pool and listening connection, apart from the store's: a write slot's renewal
// must not queue behind a burst of deliveries being recorded.
import { createPool, ident, libpqUrl } from "../../store/postgres/connect.js";
import { defaultPostgresSchema } from "../../store/postgres/store.js";
import type { ReplicaCoordination, ReplicaCoordinationOptions, ReplicaRegistry } from "../replicas.js";
import { Notices } from "./notices.js";
import { PostgresWriteSlots } from "./write-slots.js";
import { createPostgresTokenCache } from "./token-cache.js";
import { startPostgresReplicaRegistry } from "./replicas.js";

export interface PostgresCoordinationOptions extends ReplicaCoordinationOptions {
  /** Schema of the deployment's tables (the store's; default `steward`), already migrated by the store. */
  schema?: string;
  /** Told after each heartbeat of the registry whether other replicas are alive (see startPostgresReplicaRegistry). */
  onOthers?(alive: boolean | undefined): void;
}

/** Opens the coordination of a deployment whose store (and so whose schema) is already open. */
export function openPostgresCoordination(opts: PostgresCoordinationOptions): ReplicaCoordination {
  const schema = opts.schema ?? defaultPostgresSchema;
  const s = ident(schema);
  const pool = createPool(opts.url, { name: "steward-coordination", max: 4 }, opts.logger);
  const channel = Buffer.from(`steward_coord:${schema}`).subarray(0, 63).toString();
  const notices = new Notices(
    pool,
    {
      connectionString: libpqUrl(opts.url),
      application_name: "steward-coordination-listen",
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
    },
    channel,
    opts.logger,
  );
  const tokens = createPostgresTokenCache({
    pool,
    s,
    notices,
    privateKey: opts.config.privateKey,
    appId: opts.config.appId,
    logger: opts.logger,
    ...(opts.onMint ? { onMint: opts.onMint } : {}),
  });
  const writeSlots = new PostgresWriteSlots(pool, s, notices);
  let registry: ReplicaRegistry | undefined;
  return {
    coordination: { writeSlots, tokens },
    register() {
      registry ??= startPostgresReplicaRegistry({
        pool,
        s,
        logger: opts.logger,
        holds: () => ({ writeSlots: writeSlots.held(), tokenMints: tokens.minting() }),
        ...(opts.onOthers ? { onOthers: opts.onOthers } : {}),
      });
    },
    replicas: () => registry?.alive() ?? Promise.resolve([]),
    async close() {
      await tokens.close();
      await registry?.stop().catch(() => undefined);
      await notices.close();
      await pool.end().catch(() => undefined);
    },
  };
}
