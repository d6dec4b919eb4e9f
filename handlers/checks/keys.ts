// The checks handler's state in the store.

/** How long the pull request of a head commit is remembered. */
export const PULL_KEY_TTL_MS = 30 * 24 * 3_600_000;

/** The pull request a head commit was checked for (check suites and re-run requests name none). */
export function pullKey(owner: string, repo: string, sha: string): string {
  return `checks:pull:${owner.toLowerCase()}/${repo.toLowerCase()}@${sha}`;
}
