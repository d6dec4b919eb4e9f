// Which of a pull request's changed files are Steward policy files, and how they changed.
import { isPolicyPath } from "../../src/policy/index.js";
import type { ChangedFile } from "../shared/pull-files.js";

export type { ChangedFile } from "../shared/pull-files.js";

export interface PolicyChange {
  path: string;
  /** `removed` also covers a policy file renamed away. */
  change: "added" | "modified" | "removed";
}

/** The policy files a pull request touches, each once, in path order. */
export function policyChanges(files: readonly ChangedFile[], repo: string, adminRepo: string): PolicyChange[] {
  const out = new Map<string, PolicyChange>();
  const isPolicy = (p: string | undefined) => p !== undefined && isPolicyPath(p, repo, adminRepo);
  for (const f of files) {
    if (isPolicy(f.filename)) {
      // A file renamed or copied onto a policy path is new there.
      const change = f.status === "removed" ? "removed" : ["added", "renamed", "copied"].includes(f.status) ? "added" : "modified";
      out.set(f.filename, { path: f.filename, change });
    }
    if (f.status === "renamed" && isPolicy(f.previous_filename) && !out.has(f.previous_filename!)) {
      out.set(f.previous_filename!, { path: f.previous_filename!, change: "removed" });
    }
  }
  return [...out.values()].sort((a, b) => a.path.localeCompare(b.path));
}
