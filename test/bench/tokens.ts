// Section 5: installation-token mints per installation per hour, with one replica and with
// three, each replica keeping tokens in its own memory (what replicas did before) or sharing
// them sealed through Redis. Compressed time: the hub issues tokens that live `ttlMs` instead
// of an hour, and replicas renew a token at its half-life when it lives under ten minutes
// (token-cache.ts), so one renewal window is ttlMs/2 here against 55 minutes for a real
// one-hour token. The run covers a whole number of windows; every replica calls the API for the
// installation all along (a read every 100 ms), and the hub counts the tokens it issued.
// Mints per window, times the 60/55 windows of a real hour, is the hourly figure.
import { Redis } from "ioredis";
import { createHub } from "../../src/sandbox/hub.js";
import { createOctokitFactory } from "../../src/api/client.js";
import { inProcessCoordination } from "../../src/coordination/in-process.js";
import { createSharedTokenCache, type SharedTokenCache } from "../../src/coordination/redis/token-cache.js";
import { REFRESH_MARGIN_MS } from "../../src/coordination/token-cache.js";
import { loadConfig } from "../../src/config/env.js";
import { pino } from "pino";
import { dropPrefix, redisUrl, uniquePrefix } from "../redis/support.js";

export interface TokenRow {
  replicas: number;
  cache: "per replica" | "shared (Redis)";
  windows: number;
  mints: number;
  mintsPerWindow: number;
  /** For one-hour tokens renewed 5 minutes ahead: windows of 55 minutes. */
  mintsPerHour: number;
}

const REAL_WINDOWS_PER_HOUR = 60 / (60 - REFRESH_MARGIN_MS / 60_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function measure(replicas: number, shared: boolean, ttlMs: number, windows: number): Promise<TokenRow> {
  const hub = await createHub({ tokens: { ttlMs } });
  const prefix = uniquePrefix();
  const clients: Redis[] = [];
  const caches: SharedTokenCache[] = [];
  try {
    const installationId = hub.control.installation(hub.env.SANDBOX_ORG)!.id;
    const config = loadConfig({ ...hub.env, PRIVATE_KEY_PATH: undefined, STEWARD_DATA_DIR: "/tmp/steward-bench-unused" });
    const octokits = await Promise.all(
      Array.from({ length: replicas }, async (_, i) => {
        let tokenCache: SharedTokenCache | undefined;
        if (shared) {
          const client = new Redis(redisUrl);
          clients.push(client);
          tokenCache = createSharedTokenCache({ client, prefix, privateKey: config.privateKey, appId: config.appId, owner: `bench-replica-${i}` });
          caches.push(tokenCache);
        }
        const factory = createOctokitFactory({ config, logger: pino({ level: "silent" }), coordination: { ...inProcessCoordination(), ...(tokenCache ? { tokens: tokenCache } : {}) }, writeIntervalMs: 0 });
        return factory.octokitFor(installationId);
      }),
    );
    // The hub states expiry in whole seconds (as GitHub does), so a window may end up to a second
    // early: the run stops 0.9 window into the last one, after its mint and before the next.
    const until = Date.now() + (windows - 0.9) * (ttlMs / 2);
    await Promise.all(
      octokits.map(async (octokit) => {
        while (Date.now() < until) {
          await octokit.request("GET /installation/repositories");
          await sleep(100);
        }
      }),
    );
    const mints = hub.state.tokens.minted.get(installationId) ?? 0;
    return {
      replicas,
      cache: shared ? "shared (Redis)" : "per replica",
      windows,
      mints,
      mintsPerWindow: mints / windows,
      mintsPerHour: (mints / windows) * REAL_WINDOWS_PER_HOUR,
    };
  } finally {
    for (const c of caches) c.close();
    for (const c of clients) c.disconnect();
    await hub.close();
    await dropPrefix(prefix);
  }
}

export async function benchTokenMints(opts: { ttlMs: number; windows: number }, log: (line: string) => void): Promise<TokenRow[]> {
  const rows: TokenRow[] = [];
  for (const [replicas, shared] of [[1, false], [3, false], [1, true], [3, true]] as const) {
    const row = await measure(replicas, shared, opts.ttlMs, opts.windows);
    log(`  ${replicas} replica(s), ${row.cache}: ${row.mints} mints in ${row.windows} windows`);
    rows.push(row);
  }
  return rows;
}
