// How the framework obtains authenticated Octokit instances. Implemented by
// `src/api/client.ts` (Probot's Octokit: app auth, token cache, throttling, retry).
import type { ProbotOctokit } from "probot";

/** An Octokit authenticated as one installation (throttled, retried, paginating). */
export type InstallationOctokit = InstanceType<typeof ProbotOctokit>;

export interface OctokitFactory {
  /** Octokit for one installation; instances (and their rate-limit state) are kept per installation. */
  octokitFor(installationId: number): Promise<InstallationOctokit>;
  /** Octokit authenticated as the app itself (JWT), for /app endpoints. */
  appOctokit(): Promise<InstallationOctokit>;
}
