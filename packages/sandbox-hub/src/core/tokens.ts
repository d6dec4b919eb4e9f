// Installation and user tokens the hub issued. Tokens are random, opaque and never logged.
import { randomBytes } from "node:crypto";

export interface InstallationToken {
  kind: "installation";
  token: string;
  installationId: number;
  expiresAt: Date;
  permissions: Record<string, "read" | "write">;
  /** Narrowed repository ids, when the token was created for some repositories only. */
  repositoryIds: number[] | undefined;
}

export interface UserToken {
  kind: "user";
  token: string;
  login: string;
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

function randomToken(prefix: string): string {
  const bytes = randomBytes(36);
  let out = prefix;
  for (const b of bytes) out += ALPHABET[b % ALPHABET.length];
  return out;
}

/**
 * Installation token formats: `classic` is the 40-character `ghs_` + 36 characters; `stateless`
 * is GitHub's newer `ghs_<app id>_<JWT>`, about 520 characters and of varying length.
 */
export type TokenFormat = "classic" | "stateless";

const b64url = (data: string | Buffer) => Buffer.from(data).toString("base64url");

/** Opaque to clients, as GitHub asks; shaped like the real thing (two dots, base64url parts). */
function statelessToken(appId: number, installationId: number, expiresAt: Date): string {
  const header = b64url(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const payload = b64url(
    JSON.stringify({
      iss: appId,
      ins: installationId,
      exp: Math.floor(expiresAt.getTime() / 1000),
      jti: randomBytes(24).toString("base64url"),
      v: 1,
    }),
  );
  return `ghs_${appId}_${header}.${payload}.${b64url(randomBytes(256))}`;
}

export class TokenStore {
  private readonly tokens = new Map<string, InstallationToken | UserToken>();
  /** Installation tokens issued so far, per installation (what a test counts as mints). */
  readonly minted = new Map<number, number>();

  issueInstallationToken(
    t: Omit<InstallationToken, "kind" | "token">,
    format: TokenFormat = "classic",
    appId = 0,
  ): InstallationToken {
    const value = format === "stateless" ? statelessToken(appId, t.installationId, t.expiresAt) : randomToken("ghs_");
    const token: InstallationToken = { kind: "installation", token: value, ...t };
    this.tokens.set(token.token, token);
    this.minted.set(t.installationId, (this.minted.get(t.installationId) ?? 0) + 1);
    return token;
  }

  /** Whether `value` is a token this hub issued and still honours. */
  isIssued(value: string): boolean {
    return this.tokens.has(value);
  }

  /** Every installation token issued and not revoked (tests look for them where they must not be). */
  installationTokens(): string[] {
    return [...this.tokens.values()].filter((t) => t.kind === "installation").map((t) => t.token);
  }

  /** One stable token per user (like a personal access token). */
  userToken(login: string): string {
    for (const t of this.tokens.values()) if (t.kind === "user" && t.login === login) return t.token;
    const token: UserToken = { kind: "user", token: randomToken("ghp_"), login };
    this.tokens.set(token.token, token);
    return token.token;
  }

  /** A user-to-server token (OAuth sign-in of a GitHub App): a new one per sign-in. */
  issueUserToServerToken(login: string): string {
    const token: UserToken = { kind: "user", token: randomToken("ghu_"), login };
    this.tokens.set(token.token, token);
    return token.token;
  }

  lookup(token: string): InstallationToken | UserToken | undefined {
    return this.tokens.get(token);
  }

  revoke(token: string): void {
    this.tokens.delete(token);
  }
}

/**
 * Repeated bad credentials from one source lock it out: every attempt, even a valid one,
 * is answered 403 until the window passes (seeds, Authentication rule 4).
 */
export class LoginAttempts {
  private readonly failures = new Map<string, number[]>();

  constructor(
    public max: number,
    public windowMs: number,
  ) {}

  fail(key: string, now: Date): void {
    const list = this.recent(key, now);
    list.push(now.getTime());
    this.failures.set(key, list);
  }

  locked(key: string, now: Date): boolean {
    return this.recent(key, now).length >= this.max;
  }

  reset(): void {
    this.failures.clear();
  }

  private recent(key: string, now: Date): number[] {
    const since = now.getTime() - this.windowMs;
    return (this.failures.get(key) ?? []).filter((t) => t > since);
  }
}
