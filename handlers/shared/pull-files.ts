// The files a pull request changes under `.github/`, where every Steward policy file lives
// (src/policy/paths.ts). Listing them costs a rate-limited request per 100 files, and one push to
// a pull request asks more than once: `checks` on `pull_request.synchronize` and again on the
// `check_suite.requested` GitHub sends for the same head, `secrets` too in the admin repository.
// What the listing says is fixed by the two commits compared, so it is kept, keyed by them, per
// installation client (a Steward's own, so nothing crosses between services or installations);
// a second ask while the first listing is under way waits for it instead of listing again.
import type { InstallationOctokit } from "../../src/index.js";

export interface ChangedFile {
  filename: string;
  status: string;
  previous_filename?: string;
}

export interface PullCommits {
  owner: string;
  repo: string;
  number: number;
  /** Both commits known (the event says): the answer is kept and asked for once. */
  headSha?: string;
  baseSha?: string;
}

/** Pull requests kept per installation client: a few bytes each (policy files are few). */
const KEPT = 500;
/** GitHub lists at most 3,000 files of a pull request. */
const MAX_PAGES = 30;
const UNDER = ".github/";

const keptBy = new WeakMap<InstallationOctokit, Map<string, ChangedFile[]>>();
/** Listings under way, by the same key: `checks` and `secrets` on one delivery, or two deliveries for one head. */
const listingBy = new WeakMap<InstallationOctokit, Map<string, Promise<ChangedFile[]>>>();

/** The most recently used last (a Map keeps insertion order), the least recently used let go past KEPT. */
function remember(kept: Map<string, ChangedFile[]>, key: string, files: ChangedFile[]): void {
  kept.delete(key);
  kept.set(key, files);
  if (kept.size > KEPT) kept.delete(kept.keys().next().value!);
}

/** The changed files of `pull` whose name or former name is under `.github/`, as GitHub lists them. */
export async function changedGithubFiles(octokit: InstallationOctokit, pull: PullCommits): Promise<ChangedFile[]> {
  const key =
    pull.headSha && pull.baseSha
      ? `${pull.owner}/${pull.repo}#${pull.number}@${pull.baseSha}...${pull.headSha}`.toLowerCase()
      : undefined;
  let kept = keptBy.get(octokit);
  const known = key ? kept?.get(key) : undefined;
  if (known) {
    remember(kept!, key!, known);
    return known;
  }
  if (!key) return listGithubFiles(octokit, pull);
  let listing = listingBy.get(octokit);
  if (!listing) listingBy.set(octokit, (listing = new Map()));
  const under = listing.get(key);
  if (under) return under;
  const pending = listGithubFiles(octokit, pull).then((files) => {
    if (!kept) keptBy.set(octokit, (kept = new Map()));
    remember(kept, key, files);
    return files;
  });
  listing.set(key, pending);
  try {
    return await pending;
  } finally {
    listing.delete(key);
  }
}

async function listGithubFiles(octokit: InstallationOctokit, pull: PullCommits): Promise<ChangedFile[]> {
  const files: ChangedFile[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const res = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      owner: pull.owner,
      repo: pull.repo,
      pull_number: pull.number,
      per_page: 100,
      page,
    });
    for (const f of res.data as ChangedFile[]) {
      if (f.filename.startsWith(UNDER) || f.previous_filename?.startsWith(UNDER)) {
        files.push({
          filename: f.filename,
          status: f.status,
          ...(f.previous_filename ? { previous_filename: f.previous_filename } : {}),
        });
      }
    }
    if (res.data.length < 100) break;
  }
  return files;
}
