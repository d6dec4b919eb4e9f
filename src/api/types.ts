// The GitHub client's boundary: what it hands out (authenticated Octokits) and what it needs
// from outside, declared here so the client never reaches into a store or a backend.
// src/coordination/ implements what it needs: in one process (coordination/*.ts) or shared by
// replicas (coordination/redis/, coordination/postgres/); src/app.ts wires one in.
import type { StewardOctokit } from "./octokit.js";

/** An Octokit authenticated as one installation (throttled, retried, paginating). */
export type InstallationOctokit = InstanceType<typeof StewardOctokit>;

export interface OctokitFactory {
  /** Octokit for one installation; instances (and their rate-limit state) are kept per installation. */
  octokitFor(installationId: number): Promise<InstallationOctokit>;
  /** Octokit authenticated as the app itself (JWT), for /app endpoints. */
  appOctokit(): Promise<InstallationOctokit>;
}

/**
 * The write slot of each installation. GitHub asks for content-creating requests one at a time
 * and spaced, and measures the spacing between the requests it receives; the client asks for a
 * turn around each such request and says how long the next one must wait after it.
 *
 * Contract for an implementation:
 * - at most one `send` of an installation runs at a time, across every process sharing the slots;
 * - the next `send` of that installation starts no sooner than `gapMs` after the previous one
 *   settled (answered or failed);
 * - a holder that died mid-write (kill -9) frees the slot within seconds, without anyone
 *   releasing it, and the gap it asked for still holds;
 * - once one of `stops` fires, a turn not yet granted is given up: `run` rejects with the stop's
 *   error (lifecycle/abort-scope.ts `stoppedError`) and `send` is never called;
 * - within one process, turns of an installation are granted in the order asked, except that
 *   `first` ones go ahead of the others (without starving them).
 */
export interface WriteSlots {
  run<T>(installation: string, send: () => Promise<T>, turn: WriteTurn): Promise<T>;
}

export interface WriteTurn {
  /** How long after this write settles the installation's next write may leave, ms. */
  gapMs: number;
  /** Ahead of this process's queued writes of the installation (it answers something waiting). */
  first?: boolean;
  /** Stops of the work making the write and of the process. */
  stops?: readonly AbortSignal[];
}

/**
 * Where installation tokens are kept: the cache @octokit/auth-app is handed. Keys and values are
 * auth-app's (`token|createdAt|expiresAt|...`). An implementation keeps a token no longer than
 * its `expires_at` allows (coordination/token-cache.ts `tokenTimes`), and one shared by replicas
 * keeps it sealed at rest (coordination/token-crypto.ts). `get` answering undefined makes
 * auth-app mint a token and `set` it.
 */
export interface TokenCache {
  get(key: string): string | undefined | Promise<string | undefined>;
  set(key: string, value: string): void | Promise<void>;
}

/** Everything the client takes from outside to coordinate with other work and replicas. */
export interface ClientCoordination {
  writeSlots: WriteSlots;
  tokens: TokenCache;
}
