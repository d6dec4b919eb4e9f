// A named lease in Redis held by one owner for a short time: a key whose value is the owner,
// with an expiry the owner renews while it works. A holder that dies stops renewing and the
// lease lapses within its TTL; only the owner can renew or release it.
import type { RedisClient } from "../../store/redis/connect.js";
import { defineScript, type Script } from "../../store/redis/script.js";

// KEYS: lease. ARGV: owner, ttlMs. Taken when free; renewed (and kept) when already ours.
const acquireLua = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
return 0`;

// KEYS: lease. ARGV: owner, ttlMs ('' = release).
const keepLua = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`;

export class OwnedLeases {
  readonly #acquire: Script;
  readonly #keep: Script;

  constructor(client: RedisClient) {
    this.#acquire = defineScript(client, "stewardOwnedLeaseAcquire", 1, acquireLua);
    this.#keep = defineScript(client, "stewardOwnedLeaseKeep", 1, keepLua);
  }

  async acquire(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.#acquire([key], [owner, Math.ceil(ttlMs)])) === 1;
  }

  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.#keep([key], [owner, Math.ceil(ttlMs)])) === 1;
  }

  async release(key: string, owner: string): Promise<void> {
    await this.#keep([key], [owner, ""]);
  }
}
