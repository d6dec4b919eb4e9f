// Whose code a workflow run runs: a run of a fork's pull request executes the fork's commits in
// the base repository. Handlers acting with the base repository's installation token must not let
// such code buy them a write (a re-run, an approved deployment), so they ask this first. Pure.

/** The parts of a repository object (payload or API) that identify it. */
export interface RepoIdentity {
  id?: number | bigint | null;
  full_name?: string | null;
  name?: string | null;
  owner?: { login?: string | null } | null;
}

/** What a run's `head_repository` of `null` means: the fork was deleted (a base repository cannot be, under its runs). */
export const DELETED_FORK = "(deleted)";

const fullName = (r: RepoIdentity): string | undefined =>
  r.full_name ?? (r.owner?.login && r.name ? `${r.owner.login}/${r.name}` : undefined);

/**
 * The head repository's `owner/name` when it is not `repository` (the run's code comes from a
 * fork); `null` when it is the same repository; `undefined` when the objects cannot tell (a payload
 * without `head_repository`, as `workflow_job` deliveries are). Ids are compared when both are
 * known (names change on rename, ids do not), else full names, else owners.
 */
export function forkOf(
  head: RepoIdentity | null | undefined,
  repository: RepoIdentity | null | undefined,
): string | null | undefined {
  if (head === undefined || !repository) return undefined;
  if (head === null) return DELETED_FORK;
  const name = fullName(head) ?? (head.owner?.login ? `${head.owner.login}/?` : DELETED_FORK);
  if (head.id != null && repository.id != null) return String(head.id) === String(repository.id) ? null : name;
  const headName = fullName(head);
  const baseName = fullName(repository);
  if (headName && baseName) return headName.toLowerCase() === baseName.toLowerCase() ? null : name;
  const headOwner = head.owner?.login;
  const baseOwner = repository.owner?.login;
  if (headOwner && baseOwner) return headOwner.toLowerCase() === baseOwner.toLowerCase() ? null : name;
  return undefined;
}
