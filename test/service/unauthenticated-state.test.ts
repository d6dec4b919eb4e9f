// Nothing an unauthenticated request sends may create state: metric labels come from the request
// only after its signature verifies, and the event label is bounded to the known event names.
import { examples } from "../support/webhook-examples.js";
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { deliveryId, postDelivery, startHttp, type RunningHttp } from "./helpers.js";

const ping = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((e) => e.name === "ping")!
  .examples[0]!;

let http: RunningHttp | undefined;
afterEach(async () => {
  await http?.close();
  http = undefined;
});

const eventLabels = (text: string) =>
  [...new Set([...text.matchAll(/steward_deliveries_received_total\{event="([^"]*)"/g)].map((m) => m[1]!))].sort();

describe("unauthenticated requests and state", () => {
  it("label every unsigned request 'unverified', and a signed unknown event 'other': /metrics does not grow with what is sent", async () => {
    http = await startHttp();
    const body = JSON.stringify(ping);
    const unsigned = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const event = `evt_${randomBytes(6).toString("hex")}`;
        const r = await postDelivery(http!.url, {
          body,
          event,
          id: `${event}-${i}`,
          signature: `sha256=${randomBytes(32).toString("hex")}`,
        });
        expect(r.status).toBe(401);
      }
    };
    await unsigned(20);
    const after20 = await http.metrics.text();
    await unsigned(500);
    const after520 = await http.metrics.text();
    // The same series after 500 more: only the counts changed.
    const shape = (t: string) => t.replace(/\d+/g, "N");
    expect(shape(after520)).toBe(shape(after20));
    expect(eventLabels(after520)).toEqual(["unverified"]);

    // Signed: a known event keeps its name, an unknown one (GitHub may add events) is "other".
    expect((await postDelivery(http.url, { body, event: "ping", id: deliveryId() })).status).toBe(202);
    expect((await postDelivery(http.url, { body, event: "made_up_event_name", id: deliveryId() })).status).toBe(202);
    expect((await postDelivery(http.url, { body, event: "another_made_up_one", id: deliveryId() })).status).toBe(202);
    const text = await http.metrics.text();
    expect(eventLabels(text)).toEqual(["other", "ping", "unverified"]);
    expect(text).toMatch(/steward_deliveries_received_total\{event="unverified",status="401"\} 520/);
    expect(text).toMatch(/steward_deliveries_received_total\{event="other",status="202"\} 2/);
  });

  it("refusals before the signature (missing headers, oversized, wrong type) never use the sent event as a label", async () => {
    http = await startHttp({ maxBodyBytes: 1024 });
    const event = `evt_${randomBytes(6).toString("hex")}`;
    await postDelivery(http.url, { body: "{}", event, id: null });
    await postDelivery(http.url, { body: "{}", event, contentType: "text/plain" });
    await postDelivery(http.url, { body: "x".repeat(4096), event });
    const text = await http.metrics.text();
    expect(text).not.toContain(event);
    expect(eventLabels(text)).toEqual(["unverified"]);
  });
});
