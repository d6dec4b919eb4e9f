// Writes settings into a `.env` file the way `steward`'s loader (cli/dotenv.ts, Node's
// util.parseEnv) reads them back: other lines stay as they were, an earlier definition of a
// key is replaced (a multi-line quoted value with it), the file is readable by its owner only.
import { chmod, readFile, rename, writeFile } from "node:fs/promises";

/** One value as a .env line: double-quoted with `\n` escapes, so a PEM fits on one line. */
export function envLine(name: string, value: string): string {
  if (/^[A-Za-z0-9_.:/+=@-]*$/.test(value)) return `${name}=${value}`;
  if (value.includes('"')) throw new Error(`${name}: a value with a double quote cannot be written to .env`);
  return `${name}="${value.replace(/\r?\n/g, "\\n")}"`;
}

/** Pure: `text` without the definitions of `names` (a quoted value opened and not closed on its line runs to its closing quote). */
export function withoutKeys(text: string, names: ReadonlySet<string>): string[] {
  const kept: string[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(["'`]?)(.*)$/.exec(lines[i]!);
    if (!m || !names.has(m[1]!)) {
      kept.push(lines[i]!);
      continue;
    }
    const quote = m[2]!;
    if (quote && !m[3]!.includes(quote)) {
      while (i + 1 < lines.length && !lines[i + 1]!.includes(quote)) i++;
      i++; // the closing line
    }
  }
  while (kept.length > 0 && kept[kept.length - 1] === "") kept.pop();
  return kept;
}

/** Sets `values` in the file at `path` (created if missing), mode 0600, replaced atomically. */
export async function writeEnvValues(path: string, values: Record<string, string>): Promise<void> {
  let text = "";
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  const lines = withoutKeys(text, new Set(Object.keys(values)));
  for (const [name, value] of Object.entries(values)) lines.push(envLine(name, value));
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${lines.join("\n")}\n`, { mode: 0o600 });
  await chmod(temp, 0o600);
  await rename(temp, path);
}
