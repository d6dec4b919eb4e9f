// The write slot of an installation shared by replicas: one write at a time across the whole
// deployment, and the next one no sooner than `interval` after the previous one was answered.
// A slot is a lease in Redis (holder, expiry) that its holder renews while its request is in
// flight, so a holder killed mid-request frees the slot within the lease's TTL (seconds), and
// a slow request keeps it as long as it lasts. Time is Redis's own (TIME), so replicas with
// skewed clocks still agree on the spacing.
//
// Why not Bottleneck's clustering for this (it still throttles everything else): it frees a
// dead client's slot only through a job's fixed `expiration` (its `clientTimeout` drops dead
// clients only once they hold nothing), an expiration cannot be renewed while a request is
// in flight, and its `minTime` counts from when a turn is granted rather than from when the
// previous write was answered, so a replica that sends late (a busy event loop) ends up
// closer than the interval to the next replica's write.
import type { Redis } from "ioredis";
import { PROCESS_OWNER } from "../../lifecycle/process-owner.js";
import { defineScript, type Script } from "../../store/redis/script.js";
import { createKeyedQueue } from "../keyed-queue.js";
import { stoppableDelay, throwIfAnyStopped } from "../../lifecycle/abort-scope.js";

// KEYS: slot. ARGV: owner, ttlMs, intervalMs. 0: granted; otherwise how long to wait (ms).
const acquireLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local holder = redis.call('HGET', KEYS[1], 'holder')
local held = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
local nextAt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
if holder and holder ~= ARGV[1] and held > now then return -(held - now) end
if nextAt > now then return nextAt - now end
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'until', now + tonumber(ARGV[2]), 'next', now + tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]) + 60000)
return 0`;

// KEYS: slot. ARGV: owner, ttlMs, intervalMs, mode (renew|release).
const keepLua = `
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[4] == 'renew' then
  redis.call('HSET', KEYS[1], 'until', now + tonumber(ARGV[2]))
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]) + 60000)
  return 1
end
local nextAt = math.max(tonumber(redis.call('HGET', KEYS[1], 'next') or '0'), now + tonumber(ARGV[3]))
redis.call('HDEL', KEYS[1], 'holder', 'until')
redis.call('HSET', KEYS[1], 'next', nextAt)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) + 60000)
return 1`;

/** A dead holder's slot is free again this long after its last renewal. */
export const WRITE_SLOT_TTL_MS = 3_000;
/** While another holder writes, look again this often (a write takes tens to hundreds of ms). */
const POLL_HELD_MS = 25;

export interface WriteSlots {
  /**
   * Send one write of `who` in its turn: after the previous write (any replica's) was answered and
   * the interval passed. `first`: ahead of this process's writes of `who` queued without it
   * (keyed-queue.ts); across replicas turns go to whichever asks first.
   */
  run<T>(who: string, send: () => Promise<T>, opts?: WriteTurnOptions): Promise<T>;
  /** Installations whose slot this process holds now. */
  held(): string[];
}

export interface WriteTurnOptions {
  /** Ahead of this process's writes of `who` queued without it. */
  first?: boolean;
  /**
   * Once one of these fires the write gives up its place, at once or while it waits for its turn,
   * and fails with the stop's error without taking a turn: a stopped write would be refused
   * anyway, and must not make the writes queued behind it wait out an interval for nothing.
   */
  stops?: readonly AbortSignal[];
}

export function slotKey(prefix: string, who: string): string {
  return `${prefix}slot:write:${who}`;
}

export class RedisWriteSlots implements WriteSlots {
  readonly #acquire: Script;
  readonly #keep: Script;
  /** This process's queue of writes per installation: one of them contends for the slot at a time. */
  readonly #queue = createKeyedQueue();
  readonly #held = new Set<string>();
  #seq = 0;

  constructor(
    client: Redis,
    private readonly prefix: string,
    private readonly intervalMs: number,
    private readonly owner = PROCESS_OWNER,
    private readonly ttlMs = Math.max(WRITE_SLOT_TTL_MS, intervalMs),
  ) {
    this.#acquire = defineScript(client, "stewardWriteSlotAcquire", 1, acquireLua);
    this.#keep = defineScript(client, "stewardWriteSlotKeep", 1, keepLua);
  }

  run<T>(who: string, send: () => Promise<T>, opts?: WriteTurnOptions): Promise<T> {
    return this.#queue.run(who, () => this.#turn(who, send, opts?.stops ?? []), opts);
  }

  held(): string[] {
    return [...this.#held];
  }

  async #turn<T>(who: string, send: () => Promise<T>, stops: readonly AbortSignal[]): Promise<T> {
    const key = slotKey(this.prefix, who);
    // Each turn has its own holder name (this process, then a counter): a late release of an earlier turn cannot free a later one.
    const holder = `${this.owner}#${++this.#seq}`;
    for (;;) {
      throwIfAnyStopped(stops);
      const wait = Number(await this.#acquire([key], [holder, this.ttlMs, this.intervalMs]));
      if (wait === 0) break;
      await stoppableDelay(wait < 0 ? Math.min(-wait, POLL_HELD_MS) : wait, stops);
    }
    this.#held.add(who);
    const renew = setInterval(() => void this.#keep([key], [holder, this.ttlMs, this.intervalMs, "renew"]).catch(() => undefined), this.ttlMs / 3);
    renew.unref();
    try {
      return await send();
    } finally {
      clearInterval(renew);
      this.#held.delete(who);
      // A release that fails leaves the slot to expire within its TTL.
      await this.#keep([key], [holder, this.ttlMs, this.intervalMs, "release"]).catch(() => undefined);
    }
  }
}
