// The effective policy of a repository for the console: the loader's merged sections, each
// leaf value attributed to the file and line that set it (the repository's file wins over
// the organisation's), or to the handler's defaults.
import { LineCounter, parseDocument, type Document } from "yaml";
import type { InstallationOctokit } from "../handler.js";
import type { PolicyLoader } from "../policy/types.js";
import { locatePath, type PathSegment } from "../policy/positions.js";
import type { PolicyView } from "./types.js";

/** Leaves of a merged value: lists are one value (a file's list replaces the default's, it does not merge). */
function leaves(value: unknown, path: PathSegment[] = []): { path: PathSegment[]; value: unknown }[] {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return [{ path, value }];
    return entries.flatMap(([k, v]) => leaves(v, [...path, k]));
  }
  return [{ path, value }];
}

const named = (path: PathSegment[]) => ({ path: path.join("."), keys: path.map(String) });

async function readSource(
  octokit: InstallationOctokit,
  source: string,
): Promise<{ doc: Document; lines: LineCounter } | undefined> {
  const m = /^([^/]+)\/([^:]+):(.+)$/.exec(source);
  if (!m) return undefined;
  try {
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner: m[1]!,
      repo: m[2]!,
      path: m[3]!,
    });
    const content = (data as { content?: string }).content;
    if (typeof content !== "string") return undefined;
    const lines = new LineCounter();
    return { doc: parseDocument(Buffer.from(content, "base64").toString("utf8"), { lineCounter: lines }), lines };
  } catch {
    return undefined;
  }
}

export async function policyView(
  octokit: InstallationOctokit,
  policies: PolicyLoader,
  owner: string,
  repo: string,
): Promise<PolicyView> {
  const loaded = await policies.load(octokit, { owner, repo });
  const files = await Promise.all(
    loaded.sources.map(async (s) => ({ source: s, parsed: await readSource(octokit, s) })),
  );
  // Highest precedence first: the repository's own file, then the organisation's.
  const byPrecedence = [...files].reverse();
  const values = leaves(loaded.sections).map((leaf) => {
    for (const f of byPrecedence) {
      if (!f.parsed) continue;
      const at = locatePath(f.parsed.doc, f.parsed.lines, leaf.path);
      if (at.exact) return { ...named(leaf.path), value: leaf.value, from: `${f.source}:${at.line}` };
    }
    return { ...named(leaf.path), value: leaf.value, from: "default" };
  });
  return {
    sources: loaded.sources,
    values,
    errors: loaded.problems
      .filter((p) => p.severity === "error")
      .map((p) => `${p.file}:${p.line}:${p.column} ${p.message}`),
  };
}
