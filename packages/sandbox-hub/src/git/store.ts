// A small content-addressed history per repository: blobs, flat trees, commits,
// branches and tags. Shas are real git blob shas for files and unique sha-1s for commits.
import { createHash } from "node:crypto";

export interface Commit {
  sha: string;
  treeSha: string;
  /** path -> blob sha */
  tree: Map<string, string>;
  parents: string[];
  message: string;
  author: { name: string; email: string; login: string | null };
  date: Date;
}

export interface FileChange {
  path: string;
  status: "added" | "modified" | "removed";
  before: string | undefined;
  after: string | undefined;
}

export function blobSha(content: Buffer): string {
  return createHash("sha1").update(`blob ${content.length}\0`).update(content).digest("hex");
}

export const ZERO_SHA = "0000000000000000000000000000000000000000";

export class RepoGit {
  readonly blobs = new Map<string, Buffer>();
  readonly commits = new Map<string, Commit>();
  readonly branches = new Map<string, string>();
  readonly tags = new Map<string, string>();
  private counter = 0;

  /** Copy another repository's history (a fork starts with its parent's commits). */
  static forkOf(parent: RepoGit): RepoGit {
    const git = new RepoGit();
    for (const [k, v] of parent.blobs) git.blobs.set(k, v);
    for (const [k, v] of parent.commits) git.commits.set(k, v);
    for (const [k, v] of parent.branches) git.branches.set(k, v);
    return git;
  }

  resolve(ref: string | undefined, defaultBranch: string): string | undefined {
    const r = ref ?? defaultBranch;
    const bare = r.replace(/^refs\/heads\//, "").replace(/^heads\//, "");
    if (this.branches.has(bare)) return this.branches.get(bare);
    const tag = r.replace(/^refs\/tags\//, "").replace(/^tags\//, "");
    if (this.tags.has(tag)) return this.tags.get(tag);
    if (/^[0-9a-f]{7,40}$/.test(r)) {
      for (const sha of this.commits.keys()) if (sha.startsWith(r)) return sha;
    }
    return undefined;
  }

  /** Every commit reachable from `sha` (itself included), breadth first, with its distance. */
  ancestors(sha: string): Map<string, number> {
    const seen = new Map<string, number>([[sha, 0]]);
    const queue = [sha];
    for (let i = 0; i < queue.length; i++) {
      const at = queue[i]!;
      for (const parent of this.commits.get(at)?.parents ?? []) {
        if (seen.has(parent)) continue;
        seen.set(parent, seen.get(at)! + 1);
        queue.push(parent);
      }
    }
    return seen;
  }

  tree(sha: string): Map<string, string> {
    return this.commits.get(sha)?.tree ?? new Map();
  }

  read(sha: string, path: string): Buffer | undefined {
    const blob = this.tree(sha).get(path);
    return blob === undefined ? undefined : this.blobs.get(blob);
  }

  /**
   * Commit file changes on a branch (created from `from` when it does not exist).
   * `null` removes a file. Returns the new commit and what changed.
   */
  commit(
    branch: string,
    files: Record<string, string | Buffer | null>,
    opts: { message: string; author: Commit["author"]; date: Date; from?: string },
  ): { before: string; commit: Commit; changes: FileChange[]; created: boolean } {
    const before = this.branches.get(branch);
    const base = before ?? opts.from;
    const tree = new Map(base ? this.tree(base) : []);
    const changes: FileChange[] = [];
    for (const [rawPath, content] of Object.entries(files)) {
      const path = rawPath.replace(/^\/+/, "");
      const old = tree.get(path);
      if (content === null) {
        if (old !== undefined) {
          tree.delete(path);
          changes.push({ path, status: "removed", before: old, after: undefined });
        }
        continue;
      }
      const buf = Buffer.isBuffer(content) ? content : Buffer.from(content, "utf8");
      const sha = blobSha(buf);
      this.blobs.set(sha, buf);
      if (old === sha) continue;
      tree.set(path, sha);
      changes.push({ path, status: old === undefined ? "added" : "modified", before: old, after: sha });
    }
    const entries = [...tree.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
    const treeSha = createHash("sha1")
      .update(`tree ${JSON.stringify(entries)}`)
      .digest("hex");
    const parents = base ? [base] : [];
    const sha = createHash("sha1")
      .update(
        `commit ${treeSha} ${parents.join(",")} ${opts.message} ${opts.date.toISOString()} ${++this.counter} ${Math.random()}`,
      )
      .digest("hex");
    const commit: Commit = { sha, treeSha, tree, parents, message: opts.message, author: opts.author, date: opts.date };
    this.commits.set(sha, commit);
    this.branches.set(branch, sha);
    return { before: before ?? ZERO_SHA, commit, changes, created: before === undefined };
  }

  /** Changes from one commit's tree to another's. */
  diff(fromSha: string | undefined, toSha: string): FileChange[] {
    const from = fromSha ? this.tree(fromSha) : new Map<string, string>();
    const to = this.tree(toSha);
    const changes: FileChange[] = [];
    for (const [path, sha] of to) {
      const old = from.get(path);
      if (old === undefined) changes.push({ path, status: "added", before: undefined, after: sha });
      else if (old !== sha) changes.push({ path, status: "modified", before: old, after: sha });
    }
    for (const [path, sha] of from)
      if (!to.has(path)) changes.push({ path, status: "removed", before: sha, after: undefined });
    return changes.sort((a, b) => (a.path < b.path ? -1 : 1));
  }

  /** Direct children of a directory in a commit: files and sub-directories. */
  list(sha: string, dir: string): { name: string; path: string; type: "file" | "dir"; blob?: string }[] {
    const prefix = dir === "" ? "" : `${dir.replace(/\/+$/, "")}/`;
    const seen = new Map<string, { name: string; path: string; type: "file" | "dir"; blob?: string }>();
    for (const [path, blob] of this.tree(sha)) {
      if (!path.startsWith(prefix)) continue;
      const rest = path.slice(prefix.length);
      const [first, ...more] = rest.split("/");
      if (!first) continue;
      const p = prefix + first;
      if (more.length === 0) seen.set(first, { name: first, path: p, type: "file", blob });
      else if (!seen.has(first)) seen.set(first, { name: first, path: p, type: "dir" });
    }
    return [...seen.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  }
}
