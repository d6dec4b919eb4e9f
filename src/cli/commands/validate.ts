// `steward validate [--org FILE] [--document PATH] [--resolve --account ORG] FILE...`: the same
// validation the service and the steward/config check use, for editors, pre-commit hooks and CI.
// Secret sources are checked for form only, so CI needs no production secrets; `--resolve` also
// resolves them as the sync would for organisation ORG (STEWARD_SECRET_SOURCES).
// Prints `FILE:LINE:COL: message` per problem and exits 1, or exits 0 printing the effective
// policy (with defaults; merged over --org when given).
import { readFile } from "node:fs/promises";
import { stringify } from "yaml";
import type { HandlerModule } from "../../handler.js";
import { mergePolicy, policyDocuments } from "../../policy/merge.js";
import { loadHandlerPaths } from "../../config/env.js";
import { policyHandlers } from "../../../handlers/index.js";
import { DOCUMENT_DIR } from "../../policy/paths.js";
import { resolvePolicy } from "../../policy/resolve.js";
import type { Problem } from "../../policy/types.js";
import { validatePolicyText } from "../../policy/validate.js";

export const usage = `usage: steward validate [--org ORG_STEWARD_YML] [--document .github/steward/NAME.yml] [--resolve --account ORG] FILE...
  checks policy files as the service loads them: FILE:LINE:COL: message per problem (exit 1),
  or the effective policy (exit 0)
    FILE                 a repository's .github/steward.yml, or an admin-repository document
                         (.github/steward/secrets.yml), recognised by its name (secrets.yml)
    --org FILE           the organisation's steward.yml, merged under each FILE
    --document PATH      validate every FILE as this admin document whatever its name,
                         e.g. --document .github/steward/secrets.yml
    --resolve --account ORG   also resolve secret sources as the sync would for ORG`;

interface Args {
  files: string[];
  org?: string;
  document?: string;
  /** Resolve secret sources for this organisation (`--resolve --account ORG`). */
  resolve?: boolean;
  account?: string;
}

function parseArgs(args: string[]): Args | string {
  const out: Args = { files: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const value = () => args[++i] ?? "";
    if (a === "--org") out.org = value();
    else if (a.startsWith("--org=")) out.org = a.slice(6);
    else if (a === "--document") out.document = value();
    else if (a.startsWith("--document=")) out.document = a.slice(11);
    else if (a === "--resolve") out.resolve = true;
    else if (a === "--account") out.account = value();
    else if (a.startsWith("--account=")) out.account = a.slice(10);
    else if (a === "-h" || a === "--help") return usage;
    else if (a.startsWith("--")) return `steward validate: unknown option ${a}\n${usage}`;
    else out.files.push(a);
  }
  if (out.files.length === 0 || out.org === "" || out.document === "" || out.account === "") return usage;
  if (out.resolve && !out.account)
    return `steward validate: --resolve needs --account ORG (whose exposed sources to resolve)\n${usage}`;
  return out;
}

/**
 * The admin document a file is: `.github/steward/secrets.yml` for a file named like `…/steward/secrets.yml`,
 * or for any file whose name is a document's (`secrets.yml`, given `documents`, the paths handlers declare);
 * else undefined (a `steward.yml`).
 */
export function documentFor(file: string, documents: ReadonlySet<string> = new Set()): string | undefined {
  const m = /(?:^|[\\/])steward[\\/]([^\\/]+\.ya?ml)$/.exec(file);
  if (m) return DOCUMENT_DIR + m[1];
  const name = /([^\\/]+)$/.exec(file)?.[1] ?? file;
  return documents.has(DOCUMENT_DIR + name) ? DOCUMENT_DIR + name : undefined;
}

/** Said under the problems of a file checked as a steward.yml whose name is not `steward.yml`. */
function documentHint(file: string, documents: ReadonlySet<string>): string {
  const known = [...documents].join(", ") || ".github/steward/NAME.yml";
  return `${file}: checked as a steward.yml; if it is an admin-repository document, name it with --document (${known}), e.g. steward validate --document ${[...documents][0] ?? ".github/steward/NAME.yml"} ${file}\n`;
}

export function formatProblem(p: Problem): string {
  return `${p.file}:${p.line}:${p.column}: ${p.severity === "warning" ? "warning: " : ""}${p.message}`;
}

async function readText(file: string): Promise<string | Problem> {
  try {
    return await readFile(file, "utf8");
  } catch (e) {
    return {
      file,
      line: 1,
      column: 1,
      message: `cannot read file: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      path: [],
      severity: "error",
    };
  }
}

/** Validates `files`; returns the exit code, writing problems to `err` and effective policies to `out`. */
export async function validateFiles(
  args: Args,
  handlers: readonly HandlerModule<any>[],
  out: (s: string) => void,
  err: (s: string) => void,
): Promise<number> {
  const org = args.org === undefined ? undefined : await readText(args.org);
  const found: Problem[] = [];
  const effective: { file: string; value: unknown }[] = [];
  const report = (problems: Problem[]) => found.push(...problems);
  const documents = new Set(policyDocuments(handlers).keys());
  const hints: string[] = [];
  for (const file of args.files) {
    const text = await readText(file);
    if (typeof text !== "string") {
      report([text]);
      continue;
    }
    const document = args.document ?? documentFor(file, documents);
    if (document !== undefined) {
      const r = validatePolicyText(text, {
        file,
        handlers,
        document,
        ...(args.resolve ? { resolveSources: true, account: args.account! } : {}),
      });
      report(r.problems);
      const spec = policyDocuments(handlers).get(document);
      if (spec) effective.push({ file, value: mergePolicy(spec.defaults, r.value ?? {}) });
      continue;
    }
    if (org !== undefined && typeof org !== "string") {
      report([org]);
      continue;
    }
    const r = resolvePolicy(
      { ...(org !== undefined ? { org: { file: args.org!, text: org } } : {}), repo: { file, text } },
      handlers,
    );
    report(r.problems);
    if (r.problems.some((p) => p.severity === "error") && !/(^|[\\/])steward\.ya?ml$/.test(file))
      hints.push(documentHint(file, documents));
    effective.push({ file, value: r.sections });
  }
  // Errors go to stdout (the output a CI problem matcher reads); warnings beside a clean
  // result go to stderr so stdout stays the effective policy, valid YAML.
  const lines = found.map((p) => formatProblem(p) + "\n").join("");
  if (found.some((p) => p.severity === "error")) {
    out(lines);
    if (hints.length > 0) err(hints.join(""));
    return 1;
  }
  if (lines) err(lines);
  for (const e of effective) {
    if (effective.length > 1) out(`# ${e.file}\n`);
    out(stringify(e.value));
  }
  return 0;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (typeof args === "string") {
    process.stderr.write(args + "\n");
    return 2;
  }
  let handlers: readonly HandlerModule<any>[];
  try {
    handlers = await policyHandlers(loadHandlerPaths(process.env));
  } catch (e) {
    process.stderr.write(`steward validate: cannot load STEWARD_HANDLERS: ${(e as Error).message}\n`);
    return 2;
  }
  return validateFiles(
    args,
    handlers,
    (s) => process.stdout.write(s),
    (s) => process.stderr.write(s),
  );
}
