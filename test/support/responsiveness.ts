// Watches a running Steward while something heavy happens: `/healthz` polled every 50 ms and a
// signed ping sent every 200 ms, each answer's time kept, so a test can say the event loop was
// never held past a bound. The bounds are GitHub's: a delivery not answered within 10 s counts as
// failed, so a ping must be answered well within it, and /healthz (what an orchestrator restarts
// on) sooner still. They sit far above what a loaded 2-core machine adds to an answer, so only
// work that holds the loop fails them.
import { createHmac, randomUUID } from "node:crypto";
import { examples } from "./webhook-examples.js";

const ping = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "ping")!
  .examples[0]!;

/** Longest answer to /healthz the watched work may cause, ms. */
export const HEALTH_BOUND_MS = 5_000;
/** Longest answer to a signed delivery the watched work may cause, ms (GitHub waits 10 s). */
export const PING_BOUND_MS = 8_000;

export interface Responsiveness {
  /** Milliseconds each `/healthz` and each ping took, and what failed (status or error name). */
  stop(): Promise<{ health: number[]; pings: number[]; failures: string[] }>;
}

export function watchResponsiveness(baseUrl: string, webhookUrl: string, secret: string): Responsiveness {
  const health: number[] = [];
  const pings: number[] = [];
  const failures: string[] = [];
  let running = true;
  const timed = async (into: number[], go: () => Promise<Response>) => {
    const start = performance.now();
    try {
      const res = await go();
      await res.text();
      if (res.status >= 300) failures.push(`HTTP ${res.status}`);
    } catch (err) {
      failures.push((err as Error).name);
    }
    into.push(performance.now() - start);
  };
  const loop = async (into: number[], pauseMs: number, go: () => Promise<Response>) => {
    while (running) {
      await timed(into, go);
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  };
  const healthLoop = loop(health, 50, () =>
    fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(HEALTH_BOUND_MS * 2) }),
  );
  const pingLoop = loop(pings, 200, () => {
    const body = JSON.stringify(ping);
    const headers = {
      "content-type": "application/json",
      "x-github-event": "ping",
      "x-github-delivery": randomUUID(),
      "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
    };
    return fetch(webhookUrl, { method: "POST", headers, body, signal: AbortSignal.timeout(PING_BOUND_MS * 2) });
  });
  return {
    async stop() {
      running = false;
      await Promise.all([healthLoop, pingLoop]);
      return { health, pings, failures };
    },
  };
}
