// Typed wrapper over ioredis' defineCommand: every multi-key step of the Redis store is one
// Lua script, so it is atomic with respect to every other replica.
import type { RedisClient } from "./connect.js";

export type ScriptArg = string | number | Buffer;
export type Script = (keys: string[], args: ScriptArg[]) => Promise<unknown>;

export function defineScript(client: RedisClient, name: string, numberOfKeys: number, lua: string): Script {
  client.defineCommand(name, { numberOfKeys, lua });
  const command = (client as unknown as Record<string, (...a: ScriptArg[]) => Promise<unknown>>)[name]!;
  return (keys, args) => {
    if (keys.length !== numberOfKeys) throw new Error(`script ${name} takes ${numberOfKeys} keys, got ${keys.length}`);
    return command.call(client, ...keys, ...args);
  };
}

/** A script whose number of keys varies by call (declared in KEYS each time, never built inside it). */
export function defineVariadicScript(client: RedisClient, name: string, lua: string): Script {
  client.defineCommand(name, { lua });
  const command = (client as unknown as Record<string, (...a: ScriptArg[]) => Promise<unknown>>)[name]!;
  return (keys, args) => command.call(client, keys.length, ...keys, ...args);
}

/**
 * Commands sent in one write and answered in one read: the batch reads of the store (many keys
 * at once) go as one pipeline, as the client sends every other command on its own.
 */
export async function pipelined<T>(
  client: RedisClient,
  fill: (p: ReturnType<RedisClient["pipeline"]>) => void,
): Promise<T[]> {
  const p = client.pipeline();
  fill(p);
  return ((await p.exec()) ?? []).map(([error, value]) => {
    if (error) throw error;
    return value as T;
  });
}

/** A flat HGETALL-style reply [field, value, ...] as an object. */
export function pairs(flat: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(flat)) return out;
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

/** Optional text stored as "" when absent. */
export function optional(text: string | undefined): string | undefined {
  return text === undefined || text === "" ? undefined : text;
}

export function optionalNumber(text: string | undefined): number | undefined {
  return text === undefined || text === "" ? undefined : Number(text);
}
