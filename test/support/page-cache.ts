// How much of a file the OS holds in its page cache, for tests of what the payload log lets go.
import { spawnSync } from "node:child_process";

/** Bytes of `file` in the page cache, by util-linux's fincore. */
export function cachedBytes(file: string): number {
  const out = spawnSync("fincore", ["--bytes", "--noheadings", "--output", "RES", file], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`fincore failed: ${out.stderr}`);
  return Number(out.stdout.trim());
}
