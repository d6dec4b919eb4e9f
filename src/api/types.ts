// How the framework obtains authenticated Octokit instances. Implemented by
// `src/api/client.ts` (Steward's Octokit, api/octokit.ts: app auth, token cache, throttling, retry).
import type { StewardOctokit } from "./octokit.js";

/** An Octokit authenticated as one installation (throttled, retried, paginating). */
export type InstallationOctokit = InstanceType<typeof StewardOctokit>;

export interface OctokitFactory {
  /** Octokit for one installation; instances (and their rate-limit state) are kept per installation. */
  octokitFor(installationId: number): Promise<InstallationOctokit>;
  /** Octokit authenticated as the app itself (JWT), for /app endpoints. */
  appOctokit(): Promise<InstallationOctokit>;
}
