// `.env` loading at CLI start, the convention Probot users bring: KEY=value lines from `.env`
// in the working directory fill in variables the environment does not already have. The
// real environment always wins, so a deployment's settings are never replaced by a stray file.
// Parsing is Node's own (util.parseEnv: quotes, `export`, comments, multi-line values), so no
// dependency is needed.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseEnv } from "node:util";

export class DotEnvError extends Error {}

/** Loads `dir/.env` into `env` without overriding; returns the names it set (never values). */
export function loadDotEnv(env: NodeJS.ProcessEnv, dir: string): string[] {
  const file = join(dir, ".env");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return [];
    throw new DotEnvError(`cannot read ${file}: ${code ?? (e as Error).message}`);
  }
  const set: string[] = [];
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (env[name] !== undefined) continue;
    env[name] = value;
    set.push(name);
  }
  return set;
}
