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

function lines(text: string | undefined): string[] {
  if (text === undefined || text === "") return [];
  return text.replace(/\n$/, "").split("\n");
}

/** A unified-diff style patch of the whole file (enough for reviewers and annotations). */
export function patchOf(before: string | undefined, after: string | undefined): { patch: string; additions: number; deletions: number } {
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
  change: FileChange,
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
    previous_filename: null,
  };
}
