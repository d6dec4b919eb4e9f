// Progress of a long command for a person: on a terminal one line rewritten in place (at most
// a few times a second); otherwise (a log, a CI job) a plain line every few seconds and at the end.
import { progressLine, type SyncProgress } from "./progress.js";

export function progressPrinter(
  write: (text: string) => void,
  tty: boolean,
  opts: { ttyEveryMs?: number; plainEveryMs?: number } = {},
) {
  const every = tty ? (opts.ttyEveryMs ?? 200) : (opts.plainEveryMs ?? 5_000);
  let last = 0;
  let open = false;
  const show = (p: SyncProgress) => {
    if (tty) {
      write(`\r\x1b[2K${progressLine(p)}`);
      open = true;
    } else write(`${progressLine(p)}\n`);
  };
  return {
    update(p: SyncProgress): void {
      const now = Date.now();
      const final = p.phase === "done" || p.phase === "stopped";
      if (!final && now - last < every) return;
      last = now;
      show(p);
    },
    /** Ends the line on a terminal (the report follows on its own lines). */
    end(): void {
      if (open) write("\n");
      open = false;
    },
  };
}
