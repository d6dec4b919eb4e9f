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
