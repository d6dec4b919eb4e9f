// Which replicas of a deployment are alive and what each holds, kept in Redis for the
// operator (/metrics) and for tests: every replica writes its entry once a second with a
// short expiry, so a replica that died drops out within a few seconds.
import type { RedisClient } from "../../store/redis/connect.js";
import type { Logger } from "pino";
import { PROCESS_OWNER } from "../../lifecycle/process-owner.js";
import {
  REPLICA_HEARTBEAT_MS,
  REPLICA_TIMEOUT_MS,
  type ReplicaEntry,
  type ReplicaHolds,
  type ReplicaRegistry,
} from "../replicas.js";

export function replicaKeys(prefix: string) {
  return { index: `${prefix}replicas`, entry: (id: string) => `${prefix}replica:${id}`, leases: `${prefix}leases` };
}

/** The owner part (`host/pid`) of a lease token, which is how a lease names its replica. */
function ownerOf(token: string): string {
  return token.split("/").slice(0, 2).join("/");
}

export function startReplicaRegistry(opts: {
  client: RedisClient;
  prefix: string;
  holds(): ReplicaHolds;
  logger?: Logger;
  id?: string;
  now?: () => number;
}): ReplicaRegistry {
  const now = opts.now ?? Date.now;
  const id = opts.id ?? PROCESS_OWNER;
  const keys = replicaKeys(opts.prefix);
  const startedAt = now();
  let lastWarned = 0;

  async function beat(): Promise<void> {
    const at = now();
    const entry = { id, pid: process.pid, startedAt, seenAt: at, ...opts.holds() };
    await opts.client
      .multi()
      .set(keys.entry(id), JSON.stringify(entry), "PX", REPLICA_TIMEOUT_MS)
      .zadd(keys.index, at, id)
      .zremrangebyscore(keys.index, "-inf", at - REPLICA_TIMEOUT_MS)
      .exec();
  }
  const tick = () =>
    beat().catch((e: unknown) => {
      if (now() - lastWarned < 5_000) return;
      lastWarned = now();
      opts.logger?.warn({ err: { message: (e as Error).message } }, "replica registry: heartbeat failed");
    });
  void tick();
  const timer = setInterval(tick, REPLICA_HEARTBEAT_MS);
  timer.unref();

  return {
    async alive() {
      const ids = await opts.client.zrangebyscore(keys.index, now() - REPLICA_TIMEOUT_MS, "+inf");
      if (ids.length === 0) return [];
      const [raw, leases] = await Promise.all([
        opts.client.mget(ids.map(keys.entry)),
        opts.client.hgetall(keys.leases),
      ]);
      const held = new Map<string, { d: number; t: number }>();
      for (const [token, ref] of Object.entries(leases)) {
        const counts = held.get(ownerOf(token)) ?? { d: 0, t: 0 };
        if (ref.startsWith("d:")) counts.d++;
        else counts.t++;
        held.set(ownerOf(token), counts);
      }
      const out: ReplicaEntry[] = [];
      for (const text of raw) {
        if (!text) continue;
        const entry = JSON.parse(text) as Omit<ReplicaEntry, "deliveryLeases" | "taskLeases">;
        const counts = held.get(ownerOf(entry.id)) ?? { d: 0, t: 0 };
        out.push({ ...entry, deliveryLeases: counts.d, taskLeases: counts.t });
      }
      return out;
    },
    async stop() {
      clearInterval(timer);
      await opts.client.multi().del(keys.entry(id)).zrem(keys.index, id).exec();
    },
  };
}
