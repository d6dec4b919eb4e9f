// Pull requests: their state and API representations (pull, changed files).
import type { FileChange } from "../git/store.js";

export interface PullRequest {
  id: number;
  node_id: string;
  number: number;
  title: string;
  body: string | null;
  state: "open" | "closed";
  user: string;
  baseRepoId: number;
  baseRef: string;
  headRepoId: number;
  headRef: string;
  /** Commit the head branch started from: changed files are the diff from here. */
  mergeBase: string;
  draft: boolean;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  merged_at: string | null;
}

/** A changed file of a pull request: a git change, or a file moved unchanged (`renamed`). */
export type PullFileChange =
  FileChange | { path: string; status: "renamed"; previous: string; before: string; after: string };

/**
 * GitHub lists a file moved without changes as one `renamed` entry with `previous_filename`
 * instead of a removal and an addition (it also pairs similar files; the hub pairs identical ones).
 */
export function pairRenames(changes: FileChange[]): PullFileChange[] {
  const removedByBlob = new Map<string, FileChange>();
  for (const c of changes)
    if (c.status === "removed" && c.before && !removedByBlob.has(c.before)) removedByBlob.set(c.before, c);
  const movedFrom = new Map<FileChange, FileChange>();
  const paired = new Set<FileChange>();
  for (const c of changes) {
    const from = c.status === "added" && c.after ? removedByBlob.get(c.after) : undefined;
    if (from && !paired.has(from)) {
      paired.add(from);
      movedFrom.set(c, from);
    }
  }
  return changes
    .filter((c) => !paired.has(c))
    .map((c) => {
      const from = movedFrom.get(c);
      return from
        ? { path: c.path, status: "renamed" as const, previous: from.path, before: c.after!, after: c.after! }
        : c;
    });
}

function lines(text: string | undefined): string[] {
  if (text === undefined || text === "") return [];
  return text.replace(/\n$/, "").split("\n");
}

/** A unified-diff style patch of the whole file (enough for reviewers and annotations). */
export function patchOf(
  before: string | undefined,
  after: string | undefined,
): { patch: string; additions: number; deletions: number } {
  const old = lines(before);
  const now = lines(after);
  const removedLines = old.filter((l) => !now.includes(l));
  const addedLines = now.filter((l) => !old.includes(l));
  const header = `@@ -${old.length ? 1 : 0},${old.length} +${now.length ? 1 : 0},${now.length} @@`;
  const body = [...old.map((l) => (now.includes(l) ? ` ${l}` : `-${l}`)), ...addedLines.map((l) => `+${l}`)];
  return { patch: [header, ...body].join("\n"), additions: addedLines.length, deletions: removedLines.length };
}

export function fileJson(
  base: string,
  fullName: string,
  headSha: string,
  change: PullFileChange,
  text: (blob: string | undefined) => string | undefined,
): Record<string, unknown> {
  const { patch, additions, deletions } = patchOf(text(change.before), text(change.after));
  const encoded = change.path.split("/").map(encodeURIComponent).join("/");
  return {
    sha: change.after ?? change.before ?? null,
    filename: change.path,
    status: change.status,
    additions,
    deletions,
    changes: additions + deletions,
    blob_url: `${base}/${fullName}/blob/${headSha}/${encoded}`,
    raw_url: `${base}/${fullName}/raw/${headSha}/${encoded}`,
    contents_url: `${base}/repos/${fullName}/contents/${encoded}?ref=${headSha}`,
    patch,
    previous_filename: change.status === "renamed" ? change.previous : null,
  };
}
