// Where Steward's policy lives: `.github/steward.yml` in every repository (the org-wide one
// in the admin repository), and whole documents under `.github/steward/` in the admin repository.

export const POLICY_FILE = ".github/steward.yml";
export const DOCUMENT_DIR = ".github/steward/";

/** True for an admin-repository document path such as `.github/steward/secrets.yml`. */
export function isDocumentPath(path: string): boolean {
  return path.startsWith(DOCUMENT_DIR) && /^[^/]+\.ya?ml$/.test(path.slice(DOCUMENT_DIR.length));
}

/** Whether `path` is a policy file of `repo` (documents count only in the admin repository). */
export function isPolicyPath(path: string, repo: string, adminRepo: string): boolean {
  return path === POLICY_FILE || (sameName(repo, adminRepo) && isDocumentPath(path));
}

export function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

interface PushLike {
  repository?: { name?: string; owner?: { login?: string; name?: string } };
  commits?: { added?: string[]; modified?: string[]; removed?: string[] }[];
  head_commit?: { added?: string[]; modified?: string[]; removed?: string[] } | null;
}

/**
 * Whether a `push` payload touches a policy file, so the loader must drop its cache of that
 * repository. A push lists at most 20 commits (and none for very large pushes): when the list
 * may be incomplete, assume it did.
 */
export function pushTouchesPolicy(payload: PushLike, adminRepo: string): boolean {
  const repo = payload.repository?.name ?? "";
  const commits = payload.commits ?? [];
  if (commits.length === 0 || commits.length >= 20) return true;
  return commits.some((c) => [...(c.added ?? []), ...(c.modified ?? []), ...(c.removed ?? [])].some((p) => isPolicyPath(p, repo, adminRepo)));
}
