// Resolving `from: env:NAME | file:/path` to a value, in memory only. Errors name the
// source, never the value.
import { readFile } from "node:fs/promises";
import { parseSource } from "./policy.js";

export type SourceResult = { ok: true; value: string } | { ok: false; error: string };

/** A file's content minus one trailing newline (files written by `echo` carry one). */
export async function readSource(from: string, env: NodeJS.ProcessEnv = process.env): Promise<SourceResult> {
  const source = parseSource(from);
  if (!source) return { ok: false, error: "source must be env:NAME or file:/path" };
  if (source.kind === "env") {
    const value = env[source.name];
    return value === undefined ? { ok: false, error: `environment variable ${source.name} is not set` } : { ok: true, value };
  }
  try {
    const text = await readFile(source.path, "utf8");
    return { ok: true, value: text.replace(/\r?\n$/, "") };
  } catch (e) {
    return { ok: false, error: `cannot read ${source.path}: ${(e as NodeJS.ErrnoException).code ?? "error"}` };
  }
}

/** Resolve each distinct source once per sync. */
export async function readSources(froms: Iterable<string>, env?: NodeJS.ProcessEnv): Promise<Map<string, SourceResult>> {
  const out = new Map<string, SourceResult>();
  for (const from of new Set(froms)) out.set(from, await readSource(from, env));
  return out;
}
