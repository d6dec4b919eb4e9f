// Installation-token cache handed to @octokit/auth-app. auth-app's own cache keeps a token
// 59 minutes whatever its real expiry; this one honours `expires_at` (minus a margin), so a
// server that issues shorter-lived tokens (GHES settings, the sandbox) never gets an expired
// one. Every token it sees is registered for redaction.
import { registerSecret } from "../log/redact.js";

/** Renew this long before expiry so a token never expires mid-request. */
const MARGIN_MS = 5 * 60_000;
const FALLBACK_TTL_MS = 59 * 60_000;

export interface TokenCache {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
}

/**
 * auth-app stores `token|createdAt|expiresAt|...` strings; only the token (field 0) and
 * expiry (field 2) matter here.
 */
export function createTokenCache(now: () => number = Date.now): TokenCache & { size(): number } {
  const entries = new Map<string, { value: string; until: number }>();
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
      const [token, createdAt, expiresAt] = value.split("|");
      registerSecret(token);
      const expiry = Date.parse(expiresAt ?? "");
      const created = Date.parse(createdAt ?? "");
      const lifetime = Number.isFinite(expiry) && Number.isFinite(created) ? expiry - created : FALLBACK_TTL_MS;
      // Short-lived tokens: renew at the half-life rather than never caching them.
      const margin = Math.min(MARGIN_MS, lifetime / 2);
      const until = Number.isFinite(expiry) ? expiry - margin : now() + FALLBACK_TTL_MS;
      entries.set(key, { value, until });
    },
    size: () => entries.size,
  };
}
