// Reading `.github/steward/secrets.yml` from the admin repository and validating it with the
// same validator as `steward validate` and the `steward/config` check, so all three agree.
import type { HandlerModule, Problem } from "../../src/index.js";
import { mergePolicy, validatePolicyText } from "../../src/policy/index.js";
import { statusOf, type Requester } from "./api.js";
import { defaults, SECRETS_DOCUMENT_PATH, secretsDocument, type SecretsPolicy } from "./policy.js";

/** Just the document spec: validating it needs no other handler (and no import cycle). */
const documentOwner: HandlerModule = {
  name: "secrets",
  events: [],
  documents: [secretsDocument],
  handle: async () => undefined,
};

export type LoadedDocument =
  { found: false } | { found: true; policy: SecretsPolicy | undefined; problems: Problem[]; file: string };

export interface ParseOptions {
  /**
   * false for untrusted text (a fork's pull request): validate structure only, never looking
   * up its `env:` / `file:` sources on this host. Default true.
   */
  resolveSources?: boolean;
}

export function parseSecretsDocument(
  text: string,
  file: string,
  opts: ParseOptions = {},
): { policy: SecretsPolicy | undefined; problems: Problem[] } {
  const { value, problems } = validatePolicyText(text, {
    file,
    handlers: [documentOwner],
    document: SECRETS_DOCUMENT_PATH,
    resolveSources: opts.resolveSources !== false,
  });
  if (problems.some((p) => p.severity === "error")) return { policy: undefined, problems };
  return { policy: mergePolicy(defaults, value ?? {}) as SecretsPolicy, problems };
}

export async function loadSecretsDocument(
  api: Requester,
  owner: string,
  repo: string,
  ref?: string,
  opts: ParseOptions = {},
): Promise<LoadedDocument> {
  let data: { content?: string; encoding?: string; type?: string };
  try {
    const res = await api.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner,
      repo,
      path: SECRETS_DOCUMENT_PATH,
      ...(ref ? { ref } : {}),
    });
    data = res.data;
  } catch (e) {
    if (statusOf(e) === 404) return { found: false };
    throw e;
  }
  if (data.type !== undefined && data.type !== "file") return { found: false };
  const text =
    data.encoding === "base64" || data.encoding === undefined
      ? Buffer.from(data.content ?? "", "base64").toString("utf8")
      : String(data.content ?? "");
  return {
    found: true,
    file: `${owner}/${repo}:${SECRETS_DOCUMENT_PATH}`,
    ...parseSecretsDocument(text, `${owner}/${repo}:${SECRETS_DOCUMENT_PATH}`, opts),
  };
}
