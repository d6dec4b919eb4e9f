// The hub's logs keep their newest entries only, so a long-running sandbox holds bounded memory;
// what is kept stays consistent (a delivery dropped from the list cannot be fetched or redelivered).
import { describe, expect, it } from "vitest";
import { appendBounded } from "../src/core/bounded-log.js";
import { MAX_REQUEST_RECORDS } from "../src/server.js";
import { EffectsLog, MAX_EFFECTS } from "../src/core/effects.js";
import { installationToken, startHub } from "./core-helpers.js";

describe("appendBounded", () => {
  it("keeps the newest entries, dropping the oldest in batches a tenth over the bound", () => {
    const log: number[] = [];
    const dropped: number[] = [];
    for (let i = 1; i <= 1_000; i++) appendBounded(log, i, 100, (d) => dropped.push(...d));
    expect(log.length).toBeGreaterThanOrEqual(100);
    expect(log.length).toBeLessThanOrEqual(110);
    expect(log.at(-1)).toBe(1_000);
    expect(log[0]).toBe(1_000 - log.length + 1);
    expect(dropped).toEqual(Array.from({ length: 1_000 - log.length }, (_, i) => i + 1));
  });

  it("keeps the effects log to its newest entries", () => {
    const log = new EffectsLog(() => "2026-01-01T00:00:00Z");
    const total = MAX_EFFECTS + Math.ceil(MAX_EFFECTS / 10) + 1;
    for (let i = 0; i < total; i++) log.record("push", "control", { i });
    expect(log.entries.length).toBe(MAX_EFFECTS);
    expect(log.entries.at(-1)?.detail).toEqual({ i: total - 1 });
    expect(log.entries[0]?.detail).toEqual({ i: total - MAX_EFFECTS });
  });
});

describe("the hub's request log", () => {
  it("stays bounded however many requests it answers", async () => {
    const hub = await startHub();
    try {
      const token = await installationToken(hub, hub.control.installation("acme")!.id);
      // Filled directly to just under where the log drops its oldest entries (answering 55,000
      // requests here would take a minute), then past that point through HTTP, so the requests
      // the hub answers are what makes it drop them.
      const threshold = MAX_REQUEST_RECORDS + Math.ceil(MAX_REQUEST_RECORDS / 10);
      const fill = hub.control.requests().length;
      const filler = { ...hub.control.requests()[0]!, path: "/filler" };
      for (let i = fill; i < threshold - 50; i++) hub.state.requests.push({ ...filler, path: `/filler/${i}` });
      for (let i = 0; i < 100; i += 50) {
        await Promise.all(
          Array.from({ length: 50 }, () =>
            fetch(`${hub.url}/repos/acme/web`, { headers: { Authorization: `token ${token}` } }).then((r) =>
              r.arrayBuffer(),
            ),
          ),
        );
      }
      const log = hub.control.requests();
      expect(log.length).toBeLessThanOrEqual(threshold);
      expect(log.at(-1)).toMatchObject({ path: "/repos/acme/web" });
      // The oldest entries went (the first filler; the log's first entries came before it).
      expect(log.some((r) => r.path === `/filler/${fill}`)).toBe(false);
      expect(log.some((r) => r.path === `/filler/${threshold - 51}`)).toBe(true);
    } finally {
      await hub.close();
    }
  });
});

describe("the webhook deliverer's records", () => {
  it("keeps the newest deliveries, and one dropped from the list is not found by id either", async () => {
    const { createServer } = await import("node:http");
    const { Deliverer } = await import("../src/webhooks/deliverer.js");
    const server = createServer((req, res) => req.resume().on("end", () => res.writeHead(200).end("ok")));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      let id = 0;
      const port = (server.address() as { port: number }).port;
      const deliverer = new Deliverer({
        hookId: 1,
        appId: 1,
        config: { url: `http://127.0.0.1:${port}/`, content_type: "json", secret: "s", insecure_ssl: "0" } as never,
        now: () => new Date(),
        timestamp: (d) => (d ?? new Date()).toISOString(),
        nextId: () => ++id,
        maxRecords: 20,
      });
      for (let i = 0; i < 30; i++) await deliverer.send("ping", { zen: `n${i}` }, { installationId: 7 });
      expect(deliverer.records.length).toBeLessThanOrEqual(22);
      expect(deliverer.records.at(-1)?.payload).toEqual({ zen: "n29" });
      const kept = new Set(deliverer.records.map((r) => r.id));
      for (let n = 1; n <= 30; n++) expect(deliverer.byId(n) !== undefined).toBe(kept.has(n));
      expect(kept.has(1)).toBe(false);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
