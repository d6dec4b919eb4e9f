// The installation-token cache of one process, handed to @octokit/auth-app. auth-app's own
// cache keeps a token 59 minutes whatever its real expiry; this one honours `expires_at`
// (minus a margin), so a server that issues shorter-lived tokens (GHES settings, the sandbox)
// never gets an expired one. Every token it sees is registered for redaction. Replicas share
// tokens through a backend instead (shared-token-cache.ts), with the same `tokenTimes`.
import type { TokenCache } from "../api/types.js";
import { registerSecret } from "../log/redact.js";

/** Renew this long before expiry so a token never expires mid-request. */
export const REFRESH_MARGIN_MS = 5 * 60_000;
const FALLBACK_TTL_MS = 59 * 60_000;

/** When a cached token is due for renewal, and when it stops working. */
export interface TokenTimes {
  refreshAt: number;
  expiresAt: number;
}

/**
 * auth-app stores `token|createdAt|expiresAt|...` strings; only the token (field 0), creation
 * (field 1) and expiry (field 2) matter here. The token itself is registered for redaction.
 */
export function tokenTimes(value: string, now: number): TokenTimes & { token: string } {
  const [token = "", createdAt, expiresAt] = value.split("|");
  registerSecret(token, { rotating: true });
  const expiry = Date.parse(expiresAt ?? "");
  const created = Date.parse(createdAt ?? "");
  if (!Number.isFinite(expiry)) return { token, refreshAt: now + FALLBACK_TTL_MS, expiresAt: now + FALLBACK_TTL_MS };
  const lifetime = Number.isFinite(created) ? expiry - created : FALLBACK_TTL_MS;
  // Short-lived tokens: renew at the half-life rather than never caching them.
  const margin = Math.min(REFRESH_MARGIN_MS, lifetime / 2);
  return { token, refreshAt: expiry - margin, expiresAt: expiry };
}

/** Tokens cached before the cache looks for ones past renewal that nobody asked for again. */
const SWEEP_ABOVE = 1_000;

export function createTokenCache(
  now: () => number = Date.now,
): TokenCache & { get(key: string): string | undefined; size(): number } {
  const entries = new Map<string, { value: string; until: number }>();
  let sweepAt = SWEEP_ABOVE;
  return {
    get(key) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (entry.until <= now()) {
        entries.delete(key);
        return undefined;
      }
      return entry.value;
    },
    set(key, value) {
      entries.set(key, { value, until: tokenTimes(value, now()).refreshAt });
      // A token is dropped when asked for after its time; one for an installation that is never
      // asked about again (uninstalled, idle) would stay for the process's life without this.
      if (entries.size <= sweepAt) return;
      const at = now();
      for (const [k, e] of entries) if (e.until <= at) entries.delete(k);
      sweepAt = Math.max(SWEEP_ABOVE, entries.size * 2);
    },
    size: () => entries.size,
  };
}
