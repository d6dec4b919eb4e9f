// A small, real filesystem for disk-full tests: a tmpfs of a few MiB mounted on a scratch
// directory (needs root, or CAP_SYS_ADMIN; CI runs as root). Where mounting is not permitted the
// caller skips its test with the reason this gives.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface SmallDisk {
  dir: string;
  /** Writes zeros into `name` under the disk until it is full (ENOSPC); the file stays. */
  fill(name?: string): Promise<void>;
  /** Removes what `fill` wrote. */
  free(name?: string): Promise<void>;
  unmount(): void;
}

/** A tmpfs of `mib` MiB, or why there cannot be one here. */
export function mountSmallDisk(mib: number): SmallDisk | { unavailable: string } {
  if (process.platform !== "linux") return { unavailable: "tmpfs mounts are Linux only" };
  const dir = mkdtempSync(join(tmpdir(), "steward-small-disk-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${mib}m`, "tmpfs", dir], { stdio: "pipe" });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    return {
      unavailable: `cannot mount a tmpfs here (needs root): ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}`,
    };
  }
  return {
    dir,
    async fill(name = "filler") {
      const handle = await open(join(dir, name), "a");
      const chunk = Buffer.alloc(64 * 1024);
      try {
        for (;;) await handle.write(chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      } finally {
        await handle.close();
      }
    },
    async free(name = "filler") {
      await rm(join(dir, name), { force: true });
    },
    unmount() {
      execFileSync("umount", ["-l", dir], { stdio: "pipe" });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
