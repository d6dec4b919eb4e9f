// What replicas of one deployment share beyond the store, as each shared backend provides it
// (redis/cluster.ts, postgres/cluster.ts): the API client's coordination (the write slot of each
// installation, installation tokens sealed and minted once for the whole deployment) and the
// registry of live replicas with what each holds, for /metrics and the console.
import type { Logger } from "pino";
import type { ClientCoordination, WriteSlots } from "../api/types.js";
import type { StewardConfig } from "../config/types.js";
import type { SharedTokenCache } from "./shared-token-cache.js";

/** Every replica reports itself this often. */
export const REPLICA_HEARTBEAT_MS = 1_000;
/** A replica not seen for this long is dead. */
export const REPLICA_TIMEOUT_MS = 5 * REPLICA_HEARTBEAT_MS;

/** What a replica holds at the moment it reports (bounded lists: installations with work in flight). */
export interface ReplicaHolds {
  /** Installations whose shared write slot this replica holds (a write in flight). */
  writeSlots: string[];
  /** Installations whose token this replica is minting (it holds their mint lease). */
  tokenMints: string[];
}

export interface ReplicaEntry extends ReplicaHolds {
  /** `host/pid/uuid`: the same identity as the leases this replica takes. */
  id: string;
  pid: number;
  startedAt: number;
  seenAt: number;
  /** Delivery and task leases held, counted from the store's lease table. */
  deliveryLeases: number;
  taskLeases: number;
}

export interface ReplicaRegistry {
  /** Alive replicas, this one included once it reported. */
  alive(): Promise<ReplicaEntry[]>;
  stop(): Promise<void>;
}

/** What opening a backend's coordination needs. */
export interface ReplicaCoordinationOptions {
  url: string;
  config: StewardConfig;
  logger: Logger;
  /** This replica minted a token for the installation. */
  onMint?(installationId: string): void;
}

/** One replica's part in what the deployment's replicas share. */
export interface ReplicaCoordination {
  /** What the API client coordinates through (createOctokitFactory's `coordination`). */
  coordination: ClientCoordination & { writeSlots: WriteSlots & { held(): string[] }; tokens: SharedTokenCache };
  /** Start reporting this replica as alive, with the slots and mints it holds. */
  register(): void;
  /** Live replicas and what each holds. */
  replicas(): Promise<ReplicaEntry[]>;
  close(): Promise<void>;
}
