// Installation tokens shared by every replica through a backend (redis/token-cache.ts,
// postgres/token-cache.ts): one token per installation for the whole deployment instead of one
// per replica (and another after each restart). When the token is due for renewal, one replica
// takes a short mint lease and mints; the others keep using the current token (still valid for
// minutes) or, when there is none, wait for the new one. The lease lapses within seconds if its
// holder dies mid-mint, so a survivor mints instead of waiting. Tokens in the backend are sealed
// (token-crypto.ts): the backend alone yields nothing usable. A process keeps the tokens it uses
// in memory as well, so an API call costs no round trip until its token is due.
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { PROCESS_OWNER } from "../lifecycle/process-owner.js";
import type { TokenCache } from "../api/types.js";
import { deriveSealingKey, open, seal } from "./token-crypto.js";
import { tokenTimes, type TokenTimes } from "./token-cache.js";

/** A mint lease lapses this long after its holder stopped renewing it. */
export const MINT_LEASE_MS = 5_000;
/** A holder gives its lease up after this long without a mint (the mint failed; the next caller tries again). */
const MINT_DEADLINE_MS = 30_000;
/** Longest wait for another replica's mint before minting anyway (a second mint beats a stall). */
const MAX_WAIT_MS = 15_000;
/** A current token is used while another replica renews it only if it stays valid at least this long. */
const STILL_GOOD_MS = 60_000;

/** Where a backend keeps sealed tokens and mint leases. */
export interface SealedTokenStore {
  /** The backend as messages name it ("redis", "postgres"). */
  name: string;
  /** Where the token and the mint lease of one cache key live, given `<installation>:<hash of the key>`. */
  names(id: string): { token: string; lease: string };
  /** The sealed token stored under `token` and not expired, if any. */
  read(token: string): Promise<string | undefined>;
  /** Stores a sealed token for `ttlMs` (and tells replicas waiting for it, where the backend can). */
  write(token: string, sealed: string, ttlMs: number): Promise<void>;
  /** Takes the lease when free or already `owner`'s. */
  acquire(lease: string, owner: string, ttlMs: number): Promise<boolean>;
  renew(lease: string, owner: string, ttlMs: number): Promise<unknown>;
  release(lease: string, owner: string): Promise<unknown>;
  /** A short wait for another replica's token under `token` (returns early where the backend can tell). */
  awaitToken(token: string): Promise<void>;
}

export interface SealedTokenCacheOptions {
  privateKey: string;
  appId: number | string;
  owner?: string;
  logger?: Logger;
  now?: () => number;
  /** A token was minted by this process for the installation. */
  onMint?(installationId: string): void;
}

export interface SharedTokenCache extends TokenCache {
  /** Installations whose token this process is minting now (it holds their mint lease). */
  minting(): string[];
  /** Gives up the mint leases this process holds (their mints will not come). */
  close(): Promise<void>;
}

type Entry = TokenTimes & { value: string };

export function createSealedTokenCache(store: SealedTokenStore, opts: SealedTokenCacheOptions): SharedTokenCache {
  const now = opts.now ?? Date.now;
  const owner = opts.owner ?? PROCESS_OWNER;
  const sealingKey = deriveSealingKey(opts.privateKey, opts.appId);
  const memory = new Map<string, Entry>();
  const held = new Map<string, { installation: string; timer: NodeJS.Timeout; since: number }>();
  const log = opts.logger?.child({ component: "token-cache" });
  let lastWarned = 0;
  const warn = (message: string, e: unknown) => {
    if (now() - lastWarned < 5_000) return;
    lastWarned = now();
    log?.warn({ err: { message: (e as Error).message } }, message);
  };

  // auth-app's key starts with the installation id; the rest (permissions, repositories) is hashed.
  const installationOf = (key: string) => key.split("|")[0] ?? "";
  const names = (key: string) =>
    store.names(`${installationOf(key)}:${createHash("sha256").update(key).digest("hex").slice(0, 16)}`);

  async function read(key: string): Promise<Entry | undefined> {
    const where = names(key).token;
    const sealed = await store.read(where);
    const text = sealed === undefined ? undefined : open(sealingKey, sealed, where);
    if (text === undefined) return undefined;
    const entry = JSON.parse(text) as Entry;
    tokenTimes(entry.value, now()); // registers the token for redaction
    memory.set(key, entry);
    return entry;
  }

  function hold(key: string): void {
    if (held.has(key)) return;
    const lease = names(key).lease;
    const since = now();
    const timer = setInterval(() => {
      if (now() - since > MINT_DEADLINE_MS) return void letGo(key);
      store
        .renew(lease, owner, MINT_LEASE_MS)
        .catch((e: unknown) => warn("token cache: renewing a mint lease failed", e));
    }, MINT_LEASE_MS / 3);
    timer.unref();
    held.set(key, { installation: installationOf(key), timer, since });
  }

  function letGo(key: string): Promise<void> {
    const h = held.get(key);
    if (!h) return Promise.resolve();
    clearInterval(h.timer);
    held.delete(key);
    return store
      .release(names(key).lease, owner)
      .then(() => undefined)
      .catch((e: unknown) => warn("token cache: releasing a mint lease failed", e));
  }

  async function shared(key: string, local: Entry | undefined): Promise<string | undefined> {
    let entry = (await read(key)) ?? local;
    if (entry && now() < entry.refreshAt) return entry.value;
    const deadline = now() + MAX_WAIT_MS;
    for (;;) {
      if (await store.acquire(names(key).lease, owner, MINT_LEASE_MS)) {
        // Another replica may have stored its token and let the lease go between the read above
        // and this acquire: the lease is free then, yet a second mint is not needed.
        const stored = await read(key);
        if (stored && now() < stored.refreshAt) {
          await store.release(names(key).lease, owner);
          return stored.value;
        }
        hold(key);
        return undefined; // auth-app mints, then calls set()
      }
      // Another replica is minting: the current token serves meanwhile if it has time left.
      if (entry && now() < entry.expiresAt - STILL_GOOD_MS) return entry.value;
      if (now() >= deadline) {
        log?.warn(
          { installation: installationOf(key) },
          "token cache: another replica's mint is taking long; minting here",
        );
        return undefined;
      }
      await store.awaitToken(names(key).token);
      entry = (await read(key)) ?? entry;
      if (entry && now() < entry.refreshAt) return entry.value;
    }
  }

  return {
    async get(key) {
      const local = memory.get(key);
      if (local && now() < local.refreshAt) return local.value;
      try {
        return await shared(key, local);
      } catch (e) {
        // The backend unreachable: work on with what this process has, or mint for itself.
        warn(`token cache: ${store.name} unavailable, using this replica's own tokens`, e);
        return local && now() < local.expiresAt - STILL_GOOD_MS ? local.value : undefined;
      }
    },
    async set(key, value) {
      const times = tokenTimes(value, now());
      const entry: Entry = { value, refreshAt: times.refreshAt, expiresAt: times.expiresAt };
      memory.set(key, entry);
      if (memory.size > 10_000) for (const [k, e] of memory) if (e.expiresAt <= now()) memory.delete(k);
      opts.onMint?.(installationOf(key));
      const where = names(key).token;
      try {
        await store.write(
          where,
          seal(sealingKey, JSON.stringify(entry), where),
          Math.max(1, Math.floor(times.expiresAt - now())),
        );
      } catch (e) {
        warn(`token cache: storing a token in ${store.name} failed; other replicas mint their own`, e);
      } finally {
        // Released before set() returns: a caller asking next finds the lease free.
        await letGo(key);
      }
    },
    minting: () => [...new Set([...held.values()].map((h) => h.installation))],
    async close() {
      await Promise.all([...held.keys()].map(letGo));
    },
  };
}
