// Types shared by policy loading, validation, the `steward validate` CLI and the
// `steward/config` check. A Problem always carries a file position.
import type { InstallationOctokit } from "../api/types.js";

export interface Problem {
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  /** 1-based column just past the offending node, when it ends on the same line (optional). */
  endColumn?: number;
  /** Human sentence, e.g. `unknown key "max_atempts" (did you mean "max_attempts"?)`. */
  message: string;
  /** JSON path inside the document, e.g. ["rerun", "rules", 0, "log", 1]. */
  path: (string | number)[];
  severity: "error" | "warning";
  /** Optional machine-readable suggestion (did-you-mean). */
  suggestion?: string;
}

/** A JSON Schema (draft-07 subset understood by ajv). */
export type JsonSchema = Record<string, unknown>;

/** How far a semantic check may look beyond the text it is given. */
export interface CheckOptions {
  /**
   * false when the text comes from someone Steward does not trust (a fork's pull request): the
   * check validates structure only and consults nothing on Steward's host (environment
   * variables, files), so its findings cannot tell an outsider anything about the host.
   */
  resolveSources: boolean;
  /**
   * The organisation whose exposed sources (STEWARD_SECRET_SOURCES) a check may resolve; only
   * `steward validate --resolve` sets it. Without it nothing on the host is consulted.
   */
  account?: string;
}

/**
 * An extra check a section runs after the schema passed; report problems by path. The
 * validator always passes `options`; a direct caller that omits them means trusted text.
 */
export type SemanticCheck<P> = (
  value: P,
  report: (path: (string | number)[], message: string, severity?: "error" | "warning") => void,
  options?: CheckOptions,
) => void;

/** A handler's section of `.github/steward.yml`. */
export interface PolicySection<P = unknown> {
  /** Key in the file, e.g. `rerun`. */
  key: string;
  /** Schema of the section's value (additionalProperties: false where keys are closed). */
  schema: JsonSchema;
  /** Defaults applied under the merged value (deep merge, lists replace). */
  defaults: P;
  /** Checks a schema cannot express: globs, regexes, time zones, ranges. */
  check?: SemanticCheck<P>;
  /**
   * Whether the handler runs on a repository whose policy files do not mention this section
   * (with `defaults`). Default false: an absent section leaves the repository alone.
   */
  enabledByDefault?: boolean;
  /**
   * Findings on a repository file's section under the organisation file's, shown as warnings at
   * the key by `steward/config` (e.g. a repository rule that tries to loosen an organisation
   * gate). It may read the repository's facts (custom property values) through `octokit`.
   */
  review?(input: SectionReview<P>): Promise<{ path: (string | number)[]; message: string }[]>;
}

/** What a section's `review` is given: the two files' values of the section, and the repository. */
export interface SectionReview<P> {
  /** The organisation file's value of the section (validated, defaults applied). */
  org: P;
  /** The repository file's value, when the file sets the section. */
  own: P | undefined;
  octokit: InstallationOctokit;
  repository: { owner: string; repo: string };
}

/** A whole policy document a handler owns, e.g. `.github/steward/secrets.yml`. */
export interface PolicyDocumentSpec<P = unknown> {
  /** Path in the repository, e.g. `.github/steward/secrets.yml`. */
  path: string;
  /** Only the admin repository may hold it. */
  adminOnly: boolean;
  schema: JsonSchema;
  defaults: P;
  check?: SemanticCheck<P>;
}

/** The effective policy of one repository at one ref. */
export interface LoadedPolicy {
  /** Validated section values with defaults applied; a section with errors is absent. */
  sections: Record<string, unknown>;
  /** Every problem found in the files read (repository file and org file). */
  problems: Problem[];
  /** Files that contributed, e.g. ["acme/.github:.github/steward.yml", "acme/web:.github/steward.yml"]. */
  sources: string[];
  /** Section keys that a file actually sets (the org file or the repository's); others hold defaults only. */
  given: string[];
}

export interface PolicyLoader {
  /** Effective `.github/steward.yml` for a repository (default branch unless `ref`), cached, ETag-revalidated. */
  load(octokit: InstallationOctokit, target: { owner: string; repo: string; ref?: string }): Promise<LoadedPolicy>;
  /** An admin-repository document such as `.github/steward/secrets.yml`. */
  loadDocument<P = unknown>(
    octokit: InstallationOctokit,
    target: { owner: string; path: string; ref?: string },
  ): Promise<{ value: P | undefined; problems: Problem[]; found: boolean }>;
  /** Drop cached entries of a repository (a push touched a policy file). */
  invalidate(owner: string, repo: string): void;
}
