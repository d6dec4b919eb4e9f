// Live updates by server-sent events: each stream re-renders its view's fragment every few
// seconds, scoped to its reader, and sends it only when it changed. Streams are bounded per
// person (a login) and in all, end when their session is signed out, and end at shutdown.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Html } from "./html.js";
import type { ConsoleDeps, PageContext } from "./types.js";
import { overviewFragment } from "./pages/overview.js";
import { deliveriesFragment } from "./pages/deliveries.js";

const INTERVAL_MS = 2_000;
const MAX_STREAMS = 100;
/** Streams one login may hold: a few tabs; no one person can take the streams everyone shares. */
export const MAX_STREAMS_PER_LOGIN = 3;
/** A stream ends after this long: the browser reconnects, and the session and access are checked again. */
const MAX_STREAM_MS = 5 * 60_000;

const views: Record<string, (ctx: PageContext) => Promise<Html>> = {
  overview: overviewFragment,
  deliveries: deliveriesFragment,
};

interface Holder {
  /** The login, lower case: the bound is per person, however many sessions they open. */
  login: string;
  sid: string;
  /** Whether the session still stands (not signed out): asked before each update. */
  alive(): Promise<boolean>;
}

export function liveStream(deps: ConsoleDeps) {
  const open = new Map<() => void, Holder>();
  const heldBy = (login: string) => [...open.values()].filter((h) => h.login === login).length;
  return {
    async serve(req: IncomingMessage, res: ServerResponse, ctx: PageContext, holder: Holder): Promise<void> {
      const render = views[ctx.url.searchParams.get("view") ?? ""];
      if (!render) {
        res.writeHead(404, { "content-type": "text/plain" }).end("unknown view");
        return;
      }
      // A login that can see no repository has nothing to watch: it holds no stream at all.
      if (ctx.access.repositories.length === 0) {
        res.writeHead(403, { "content-type": "text/plain" }).end("no repository to watch");
        return;
      }
      if (heldBy(holder.login) >= MAX_STREAMS_PER_LOGIN) {
        res
          .writeHead(429, { "content-type": "text/plain", "retry-after": "30" })
          .end(`at most ${MAX_STREAMS_PER_LOGIN} live views per person: close another tab`);
        return;
      }
      if (open.size >= MAX_STREAMS) {
        res.writeHead(503, { "content-type": "text/plain", "retry-after": "30" }).end("too many live views");
        return;
      }
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
      });
      res.write("retry: 5000\n\n");
      let last = "";
      let busy = false;
      const tick = async () => {
        if (busy) return;
        busy = true;
        try {
          // Signed out here or on another replica: the stream ends with the session.
          if (!(await holder.alive())) return stop();
          const text = (await render(ctx)).text;
          if (text !== last) {
            last = text;
            res.write(
              `event: fragment\n${text
                .split("\n")
                .map((l) => `data: ${l}`)
                .join("\n")}\n\n`,
            );
          } else res.write(": idle\n\n");
        } catch (error) {
          deps.logger.debug({ error: String(error) }, "live view render failed");
        } finally {
          busy = false;
        }
      };
      const timer = setInterval(() => void tick(), INTERVAL_MS);
      const expiry = setTimeout(() => stop(), MAX_STREAM_MS);
      const stop = () => {
        clearInterval(timer);
        clearTimeout(expiry);
        open.delete(stop);
        res.end();
      };
      open.set(stop, holder);
      req.on("close", stop);
      await tick();
    },
    /** End the streams of a session (signed out). */
    endSession(sid: string): void {
      for (const [stop, h] of [...open]) if (h.sid === sid) stop();
    },
    close(): void {
      for (const stop of [...open.keys()]) stop();
    },
  };
}
