// Loads the effective policy of a repository through the contents API. Files are cached per
// repository, path and ref; a cached file is served from memory while fresh, and once stale
// (or after a push invalidated it) revalidated with If-None-Match (src/api/conditional.ts) so an
// unchanged file answers 304 and costs no rate limit. A file at a commit SHA never changes and is
// never refetched. A missing file has no ETag to revalidate with (a 404 always costs a request),
// and most repositories of an organisation have none: it stays known-missing until an event says
// it may exist now (a push touching a policy path, a repository or installation event: the
// engine calls `invalidate`), with a long backstop for a replica that never saw that event.
import type { Logger } from "pino";
import { requestFnOf, requestIfChanged } from "../api/conditional.js";
import type { HandlerModule, InstallationOctokit } from "../handler.js";
import { mergePolicy, policyDocuments } from "./merge.js";
import { POLICY_FILE, sameName } from "./paths.js";
import { resolvePolicy, type PolicySource } from "./resolve.js";
import type { LoadedPolicy, PolicyLoader, Problem } from "./types.js";
import { validatePolicyText } from "./validate.js";
import { keepRecent } from "../lifecycle/recently-used.js";

export interface PolicyLoaderOptions {
  adminRepo: string;
  handlers: readonly HandlerModule<any>[];
  logger: Logger;
  /** How long a fetched file is trusted without asking again (default 5 minutes). */
  freshMs?: number;
  /**
   * How long a file known to be missing is trusted without asking again (default 1 hour; never
   * less than `freshMs`). Events this service receives invalidate it sooner; the backstop is for
   * the ones another replica ran. Replicas sharing a store pass 0: they trust it as long as a
   * found file.
   */
  missingFreshMs?: number;
  /**
   * Files kept in memory at most (default 20,000, a few hundred bytes each; least recently used go
   * first): an organisation's every repository, so that what is known missing stays known.
   */
  maxEntries?: number;
  now?: () => number;
}

interface FileEntry {
  /** Bumped whenever the content changes, so derived results know when to recompute. */
  version: number;
  etag: string | undefined;
  /** undefined: no such file. */
  text: string | undefined;
  /** Why the file could not be used although it exists (e.g. too large). */
  unusable?: string;
  checkedAt: number;
  stale: boolean;
}

const SHA = /^[0-9a-f]{40}$/i;
let versions = 0;

export function createPolicyLoader(opts: PolicyLoaderOptions): PolicyLoader {
  const freshMs = opts.freshMs ?? 5 * 60_000;
  const missingFreshMs = Math.max(freshMs, opts.missingFreshMs ?? 60 * 60_000);
  const maxEntries = opts.maxEntries ?? 20_000;
  // Merged policies are recomputed from the kept files without a request: fewer of them are kept.
  const maxResolved = Math.min(maxEntries, 2000);
  const now = opts.now ?? Date.now;
  const files = new Map<string, FileEntry>();
  const inflight = new Map<string, Promise<FileEntry>>();
  const resolved = new Map<string, { inputs: string; policy: LoadedPolicy }>();

  const fileKey = (owner: string, repo: string, path: string, ref: string | undefined) =>
    [owner.toLowerCase(), repo.toLowerCase(), path, ref ?? ""].join("\0");

  async function fetchFile(
    octokit: InstallationOctokit,
    owner: string,
    repo: string,
    path: string,
    ref: string | undefined,
  ): Promise<FileEntry> {
    const key = fileKey(owner, repo, path, ref);
    const cached = files.get(key);
    if (cached) {
      keepRecent(files, key, cached, maxEntries);
      const immutable = ref !== undefined && SHA.test(ref);
      const trusted = cached.text === undefined ? missingFreshMs : freshMs;
      if (immutable || (!cached.stale && now() - cached.checkedAt < trusted)) return cached;
    }
    let pending = inflight.get(key);
    if (!pending) {
      pending = revalidate(octokit, { owner, repo, path, ref }, cached).finally(() => inflight.delete(key));
      inflight.set(key, pending);
    }
    const entry = await pending;
    keepRecent(files, key, entry, maxEntries);
    return entry;
  }

  async function revalidate(
    octokit: InstallationOctokit,
    target: { owner: string; repo: string; path: string; ref: string | undefined },
    cached: FileEntry | undefined,
  ): Promise<FileEntry> {
    const where = `${target.owner}/${target.repo}:${target.path}${target.ref ? `@${target.ref}` : ""}`;
    try {
      const answer = await requestIfChanged(
        requestFnOf(octokit),
        "GET /repos/{owner}/{repo}/contents/{path}",
        { owner: target.owner, repo: target.repo, path: target.path, ...(target.ref ? { ref: target.ref } : {}) },
        cached?.etag,
      );
      if (!answer.changed && cached) {
        opts.logger.debug({ file: where, status: 304 }, "policy file unchanged");
        cached.checkedAt = now();
        cached.stale = false;
        return cached;
      }
      if (!answer.changed) throw new Error(`${where}: 304 without a cached copy`);
      opts.logger.debug({ file: where, status: answer.response.status }, "policy file fetched");
      return {
        version: ++versions,
        etag: answer.etag,
        checkedAt: now(),
        stale: false,
        ...decodeContent(answer.response.data),
      };
    } catch (e) {
      const status = (e as { status?: number }).status;
      if (status === 404) {
        opts.logger.debug({ file: where, status }, "no policy file");
        if (cached && cached.text === undefined) {
          cached.checkedAt = now();
          cached.stale = false;
          return cached;
        }
        return { version: ++versions, etag: undefined, text: undefined, checkedAt: now(), stale: false };
      }
      if (cached && (status === undefined || status >= 500)) {
        // The API is down: yesterday's policy beats no policy. Try again on the next load.
        opts.logger.warn(
          { file: where, status, err: (e as Error).message },
          "policy file revalidation failed; using the cached copy",
        );
        return cached;
      }
      throw e;
    }
  }

  async function loadFile(octokit: InstallationOctokit, owner: string, repo: string, path: string, ref?: string) {
    const entry = await fetchFile(octokit, owner, repo, path, ref);
    return { entry, file: `${owner}/${repo}:${path}` };
  }

  const loader: PolicyLoader = {
    async load(octokit, target) {
      const isAdmin = sameName(target.repo, opts.adminRepo);
      const [org, own] = await Promise.all([
        isAdmin ? undefined : loadFile(octokit, target.owner, opts.adminRepo, POLICY_FILE),
        loadFile(octokit, target.owner, target.repo, POLICY_FILE, target.ref),
      ]);
      const key = fileKey(target.owner, target.repo, POLICY_FILE, target.ref);
      const inputs = `${org?.entry.version ?? "-"}/${own.entry.version}`;
      const hit = resolved.get(key);
      if (hit && hit.inputs === inputs) return hit.policy;
      const source = (f: { entry: FileEntry; file: string }): PolicySource => ({
        file: f.file,
        text: f.entry.unusable ? "" : f.entry.text,
      });
      const result = resolvePolicy({ ...(org ? { org: source(org) } : {}), repo: source(own) }, opts.handlers);
      const unusable = [org, own].flatMap((f) =>
        f?.entry.unusable ? [unusableProblem(f.file, f.entry.unusable)] : [],
      );
      const policy: LoadedPolicy = {
        sections: unusable.length > 0 ? {} : result.sections,
        problems: [...unusable, ...result.problems],
        sources: result.sources,
        given: unusable.length > 0 ? [] : result.given,
      };
      keepRecent(resolved, key, { inputs, policy }, maxResolved);
      return policy;
    },

    async loadDocument<P = unknown>(
      octokit: InstallationOctokit,
      target: { owner: string; path: string; ref?: string },
    ) {
      const { entry, file } = await loadFile(octokit, target.owner, opts.adminRepo, target.path, target.ref);
      const spec = policyDocuments(opts.handlers).get(target.path);
      if (entry.text === undefined)
        return { value: spec ? (mergePolicy(spec.defaults, undefined) as P) : undefined, problems: [], found: false };
      if (entry.unusable) return { value: undefined, problems: [unusableProblem(file, entry.unusable)], found: true };
      const { value, problems } = validatePolicyText(entry.text, {
        file,
        handlers: opts.handlers,
        document: target.path,
      });
      const ok = spec !== undefined && !problems.some((p) => p.severity === "error");
      return { value: ok ? (mergePolicy(spec.defaults, value ?? {}) as P) : undefined, problems, found: true };
    },

    invalidate(owner, repo) {
      const prefix = [owner.toLowerCase(), repo.toLowerCase(), ""].join("\0");
      for (const [key, entry] of files) if (key.startsWith(prefix)) entry.stale = true;
    },
  };
  return loader;
}

function unusableProblem(file: string, message: string): Problem {
  return { file, line: 1, column: 1, message, path: [], severity: "error" };
}

/** The contents API answer for a path: a file (base64), a directory (a list), or something else. */
function decodeContent(data: unknown): Pick<FileEntry, "text" | "unusable"> {
  if (Array.isArray(data)) return { text: "", unusable: "is a directory, not a file" };
  const d = data as { type?: string; encoding?: string; content?: string; size?: number };
  if (d.type !== undefined && d.type !== "file") return { text: "", unusable: `is a ${d.type}, not a file` };
  if (d.encoding === "base64" && typeof d.content === "string")
    return { text: Buffer.from(d.content, "base64").toString("utf8") };
  // Files over 1 MB come back without content; no sane policy file is that large.
  return {
    text: "",
    unusable: `cannot be read through the contents API (encoding "${d.encoding ?? "none"}", ${d.size ?? "?"} bytes)`,
  };
}
