// The write slots of installations shared by replicas through Redis: one write of an
// installation at a time across the whole deployment, and the next one no sooner than the gap
// the previous one asked for after it was answered. A slot is a lease in Redis (holder, expiry)
// that its holder renews while its request is in flight, so a holder killed mid-request frees
// the slot within the lease's TTL (seconds), and a slow request keeps it as long as it lasts.
// Time is Redis's own (TIME), so replicas with skewed clocks still agree on the spacing.
//
// Not Bottleneck's clustering (which throttles everything else): it frees a dead client's slot
// only through a job's fixed `expiration`, which cannot be renewed while a request is in
// flight, and its `minTime` counts from when a turn is granted rather than from when the
// previous write was answered, so a replica that sends late ends up closer than the gap to the
// next replica's write.
import type { RedisClient } from "../../store/redis/connect.js";
import type { WriteSlots, WriteTurn } from "../../api/types.js";
import { PROCESS_OWNER } from "../../lifecycle/process-owner.js";
import { defineScript, type Script } from "../../store/redis/script.js";
import { createKeyedQueue } from "../keyed-queue.js";
import { stoppableDelay, throwIfAnyStopped } from "../../lifecycle/abort-scope.js";

// KEYS: slot. ARGV: owner, ttlMs, gapMs. 0: granted; otherwise how long to wait (ms).
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

// KEYS: slot. ARGV: owner, ttlMs, gapMs, mode (renew|release).
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
    client: RedisClient,
    private readonly prefix: string,
    private readonly owner = PROCESS_OWNER,
    private readonly ttlMs = WRITE_SLOT_TTL_MS,
  ) {
    this.#acquire = defineScript(client, "stewardWriteSlotAcquire", 1, acquireLua);
    this.#keep = defineScript(client, "stewardWriteSlotKeep", 1, keepLua);
  }

  run<T>(who: string, send: () => Promise<T>, turn: WriteTurn): Promise<T> {
    return this.#queue.run(who, () => this.#turn(who, send, turn.gapMs, turn.stops ?? []), turn);
  }

  /** Installations whose slot this process holds now. */
  held(): string[] {
    return [...this.#held];
  }

  async #turn<T>(who: string, send: () => Promise<T>, gapMs: number, stops: readonly AbortSignal[]): Promise<T> {
    const key = slotKey(this.prefix, who);
    // Each turn has its own holder name (this process, then a counter): a late release of an earlier turn cannot free a later one.
    const holder = `${this.owner}#${++this.#seq}`;
    for (;;) {
      throwIfAnyStopped(stops);
      const wait = Number(await this.#acquire([key], [holder, this.ttlMs, gapMs]));
      if (wait === 0) break;
      await stoppableDelay(wait < 0 ? Math.min(-wait, POLL_HELD_MS) : wait, stops);
    }
    this.#held.add(who);
    const renew = setInterval(
      () => void this.#keep([key], [holder, this.ttlMs, gapMs, "renew"]).catch(() => undefined),
      this.ttlMs / 3,
    );
    renew.unref();
    try {
      return await send();
    } finally {
      clearInterval(renew);
      this.#held.delete(who);
      // A release that fails leaves the slot to expire within its TTL.
      await this.#keep([key], [holder, this.ttlMs, gapMs, "release"]).catch(() => undefined);
    }
  }
}
