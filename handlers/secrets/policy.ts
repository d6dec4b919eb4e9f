// The admin-repository document `.github/steward/secrets.yml`: which Actions secret and
// variable goes where. Values of secrets are never literal: they name a source the service
// resolves (env:NAME or file:/path), so the policy file can live in a repository safely.
import {
  ACT_MODE_SCHEMA,
  isSettingName,
  type ActMode,
  type JsonSchema,
  type PolicyDocumentSpec,
  type SemanticCheck,
  globError,
} from "../../src/index.js";
import { parseSource, resolveSource, sourceFormError } from "./sources.js";

export const SECRETS_DOCUMENT_PATH = ".github/steward/secrets.yml";

export type Visibility = "all" | "private" | "selected";

export interface OrgPlacement {
  visibility: Visibility;
  /** Names or globs; only with `selected`. */
  repositories?: string[];
}

interface Placement {
  /** `report`: this entry's writes are planned, recorded and reported as "would have", never made. */
  mode?: ActMode;
  /** Adopt this entry's targets that exist but Steward did not create (default: the document's `adopt`). */
  adopt?: boolean;
  org?: OrgPlacement;
  /** Repository-level targets: names or globs. */
  repositories?: string[];
  /**
   * `org`: the repositories above get one organisation secret/variable shared with exactly them
   * (visibility `selected`) instead of one copy each: one write on the first sync and one
   * `PUT .../repositories/{id}` per repository added later, rather than a write per repository.
   */
  share?: "org";
  /** Environment name -> repositories (names or globs). */
  environments?: Record<string, string[]>;
}

export interface SecretEntry extends Placement {
  /** `env:NAME` or `file:/absolute/path`. */
  from?: string;
  /** Present only so validation can say why a literal is refused. */
  value?: unknown;
}

export interface VariableEntry extends Placement {
  value: string | number | boolean;
}

export interface SecretsPolicy {
  secrets: Record<string, SecretEntry>;
  variables: Record<string, VariableEntry>;
  /** Delete targets Steward created that the policy no longer lists. */
  prune: boolean;
  /**
   * Targets that exist but Steward did not create: `true` adopts them (overwritten and recorded as
   * Steward's, so prune may delete them); `false` or unsaid leaves them alone and reports each as a
   * conflict saying how to adopt it. Entries may say their own `adopt`.
   */
  adopt?: boolean;
  /** `report`: the whole document is planned, recorded and reported as "would have", nothing written. */
  mode?: ActMode;
}

export const defaults: SecretsPolicy = { secrets: {}, variables: {}, prune: false };

const stringList: JsonSchema = { type: "array", items: { type: "string" } };

const placementProperties: Record<string, JsonSchema> = {
  mode: ACT_MODE_SCHEMA,
  adopt: { type: "boolean" },
  org: {
    type: "object",
    additionalProperties: false,
    required: ["visibility"],
    properties: {
      visibility: { enum: ["all", "private", "selected"] },
      repositories: stringList,
    },
  },
  repositories: stringList,
  share: { enum: ["org"] },
  environments: { type: "object", additionalProperties: stringList },
};

export const schema: JsonSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    secrets: {
      type: "object",
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        // `value` is accepted by the schema only so the semantic check can explain the refusal.
        properties: { from: { type: "string" }, value: {}, ...placementProperties },
      },
    },
    variables: {
      type: "object",
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        required: ["value"],
        properties: { value: { type: ["string", "number", "boolean"] }, ...placementProperties },
      },
    },
    prune: { type: "boolean" },
    adopt: { type: "boolean" },
    mode: ACT_MODE_SCHEMA,
  },
};

/** GitHub's rules for secret and variable names. Returns an error message or undefined. */
export function nameError(name: string): string | undefined {
  if (!/^[A-Za-z0-9_]+$/.test(name)) return `name "${name}" may contain only letters, digits and "_"`;
  if (/^[0-9]/.test(name)) return `name "${name}" must not start with a digit`;
  if (/^GITHUB_/i.test(name)) return `name "${name}" must not start with GITHUB_`;
  return undefined;
}

/**
 * What validation says about a `from`. Without `resolve` (the service, CI, any pull request) only
 * what holds whatever the host has: its form, and that Steward's own settings are never a source.
 * `resolve` (`steward validate --resolve`) also resolves it for that organisation, answering with
 * the same "not available" the sync gives. Messages never contain a value.
 */
export function sourceError(
  from: string,
  opts: { resolve?: { org: string; env?: NodeJS.ProcessEnv } } = {},
): string | undefined {
  const formError = sourceFormError(from);
  if (formError) return formError;
  const source = parseSource(from)!;
  if (source.kind === "env" && isSettingName(source.name))
    return `source ${from} is one of Steward's own settings, which are never available to a policy`;
  if (!opts.resolve) return undefined;
  const result = resolveSource(from, { org: opts.resolve.org, ...(opts.resolve.env ? { env: opts.resolve.env } : {}) });
  return result.ok ? undefined : result.error;
}

type Report = Parameters<SemanticCheck<SecretsPolicy>>[1];

function checkPlacement(kind: "secrets" | "variables", name: string, entry: Placement, report: Report): void {
  const at = [kind, name];
  const globs = (list: string[] | undefined, path: (string | number)[]) =>
    list?.forEach((glob, i) => {
      const err = globError(glob);
      if (err) report([...path, i], err);
    });
  if (entry.org) {
    if (entry.org.repositories && entry.org.visibility !== "selected") {
      report(
        [...at, "org", "repositories"],
        `"repositories" is allowed only with visibility "selected" (here "${entry.org.visibility}")`,
      );
    }
    if (entry.org.visibility === "selected" && !entry.org.repositories) {
      report([...at, "org"], `visibility "selected" without "repositories" shares it with no repository`, "warning");
    }
    globs(entry.org.repositories, [...at, "org", "repositories"]);
  }
  globs(entry.repositories, [...at, "repositories"]);
  if (entry.share === "org" && entry.org) {
    report(
      [...at, "share"],
      `"share: org" makes "repositories" one organisation ${kind === "secrets" ? "secret" : "variable"}; it cannot be combined with "org" (there is one per name)`,
    );
  }
  if (entry.share === "org" && !entry.repositories?.length)
    report([...at, "share"], `"share: org" without "repositories" shares it with no repository`, "warning");
  for (const [environment, list] of Object.entries(entry.environments ?? {})) {
    if (environment.trim() === "") report([...at, "environments", environment], "empty environment name");
    globs(list, [...at, "environments", environment]);
  }
  if (!entry.org && !entry.repositories?.length && !Object.keys(entry.environments ?? {}).length) {
    report(
      at,
      `${kind === "secrets" ? "secret" : "variable"} ${name} goes nowhere: give org, repositories or environments`,
      "warning",
    );
  }
}

function checkNames(kind: "secrets" | "variables", names: string[], report: Report): void {
  const seen = new Map<string, string>();
  for (const name of names) {
    const err = nameError(name);
    if (err) report([kind, name], err);
    const upper = name.toUpperCase();
    const first = seen.get(upper);
    if (first !== undefined)
      report([kind, name], `"${name}" and "${first}" are the same name (names are case-insensitive)`);
    else seen.set(upper, name);
  }
}

/** Sources are resolved on the host only when asked for one organisation (`steward validate --resolve`). */
export const check: SemanticCheck<SecretsPolicy> = (policy, report, options) => {
  const resolve = options?.resolveSources && options.account ? { org: options.account } : undefined;
  const secrets = policy.secrets ?? {};
  const variables = policy.variables ?? {};
  checkNames("secrets", Object.keys(secrets), report);
  checkNames("variables", Object.keys(variables), report);
  for (const [name, entry] of Object.entries(secrets)) {
    if (entry.value !== undefined) {
      report(
        ["secrets", name, "value"],
        `secret ${name} has a literal value: secrets must come from env:NAME or file:/path`,
      );
    } else if (entry.from === undefined) {
      report(["secrets", name], `secret ${name} needs "from: env:NAME" or "from: file:/path"`);
    } else {
      const err = sourceError(entry.from, resolve ? { resolve } : {});
      if (err) report(["secrets", name, "from"], err);
    }
    checkPlacement("secrets", name, entry, report);
  }
  for (const [name, entry] of Object.entries(variables)) checkPlacement("variables", name, entry, report);
};

// `any`: the framework holds documents of every handler in one list.
export const secretsDocument: PolicyDocumentSpec<any> = {
  path: SECRETS_DOCUMENT_PATH,
  adminOnly: true,
  schema,
  defaults,
  check,
};
