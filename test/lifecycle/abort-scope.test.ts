// linkSignals (src/lifecycle/abort-scope.ts): a run's signal fires with either source, and once
// unlinked leaves nothing behind on a source that lives on (the service's shutdown signal).
import { getEventListeners } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { linkSignals, stoppableDelay, throwIfAnyStopped } from "../../src/lifecycle/abort-scope.js";
import { expectStoppedWith } from "../support/stopped.js";

/** What a signal holds under symbol keys (Node keeps its dependants there): the sizes of its collections. */
function heldBy(signal: AbortSignal): number {
  let held = 0;
  for (const key of Object.getOwnPropertySymbols(signal)) {
    // Node's own collections (SafeSet, SafeMap) are not instances of the global Set and Map.
    const size = (signal as unknown as Record<symbol, { size?: unknown } | undefined>)[key]?.size;
    if (typeof size === "number") held += size;
  }
  return held;
}

describe("linkSignals", () => {
  it("fires with whichever source fires first, with its reason, and once only", () => {
    const a = new AbortController();
    const b = new AbortController();
    const { signal } = linkSignals([a.signal, b.signal]);
    const seen: unknown[] = [];
    signal.addEventListener("abort", () => seen.push(signal.reason));
    b.abort(new Error("lease lost"));
    a.abort(new Error("shutting down"));
    expect(seen).toEqual([new Error("lease lost")]);
  });

  it("is aborted at once when a source already was", () => {
    const a = new AbortController();
    a.abort("gone");
    expect(linkSignals([new AbortController().signal, a.signal]).signal.reason).toBe("gone");
  });

  it("after unlink, a source firing no longer reaches it, and 10,000 runs leave nothing on a source that lives on", () => {
    const shutdown = new AbortController();
    const before = heldBy(shutdown.signal);
    for (let i = 0; i < 10_000; i++) {
      const lease = new AbortController();
      const link = linkSignals([shutdown.signal, lease.signal]);
      link.unlink();
    }
    expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
    // AbortSignal.any left one entry per call here on Node 20, never removed.
    expect(heldBy(shutdown.signal)).toBe(before);
    const last = linkSignals([shutdown.signal]);
    last.unlink();
    shutdown.abort("stop");
    expect(last.signal.aborted).toBe(false);
  });

  it("is what the service composes signals with: no source file calls AbortSignal.any", () => {
    const root = join(import.meta.dirname, "..", "..", "src");
    const files = readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    expect(files.length).toBeGreaterThan(50);
    expect(files.filter((f) => readFileSync(join(root, f), "utf8").includes("AbortSignal.any("))).toEqual([]);
  });
});

describe("stoppableDelay", () => {
  it("resolves after its time when nothing fires, and leaves no listener behind", async () => {
    const stop = new AbortController();
    await stoppableDelay(5, [stop.signal]);
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
  });

  it("rejects with the stop's error as soon as one of its signals fires, or at once when one already has", async () => {
    const quiet = new AbortController();
    const stop = new AbortController();
    // Ten minutes: only the stop can end it within the test.
    const waiting = stoppableDelay(600_000, [quiet.signal, stop.signal]);
    stop.abort(new Error("shutting down"));
    await expectStoppedWith(waiting, "shutting down");
    expect(getEventListeners(quiet.signal, "abort")).toHaveLength(0);
    await expect(stoppableDelay(600_000, [stop.signal])).rejects.toThrow(/stopped: shutting down/);
    expect(() => throwIfAnyStopped([quiet.signal, stop.signal])).toThrow(/stopped: shutting down/);
    expect(() => throwIfAnyStopped([quiet.signal])).not.toThrow();
  });
});
