// The webhook proxy's event-stream parser: the WHATWG framing (line endings, multi-line data,
// comments, ids, a BOM, events split anywhere across chunks) and its bounds (an event over the
// cap or refused by its head is dropped as it arrives, and nothing of it is kept).
import { describe, expect, it } from "vitest";
import { BoundedSseParser, type SseDrop, type SseEvent } from "../../src/intake/bounded-sse.js";

function parser(opts: { max?: number; head?: number; screen?: (head: Buffer) => string | undefined } = {}) {
  return new BoundedSseParser({
    maxEventBytes: opts.max ?? 1024,
    headBytes: opts.head ?? 64,
    screen: opts.screen ?? (() => undefined),
    wanted: (type) => type === "message",
  });
}

const shown = (events: (SseEvent | SseDrop)[]) =>
  events.map((e) =>
    "reason" in e ? { dropped: e.reason } : { type: e.type, data: e.data.toString("utf8"), id: e.lastEventId },
  );

/** `text` fed in every way of cutting it in two, and byte by byte: the same events each time. */
function everySplit(text: string, make = () => parser()) {
  const bytes = Buffer.from(text, "utf8");
  const whole = shown(make().push(bytes));
  for (let cut = 0; cut <= bytes.length; cut++) {
    const p = make();
    expect(shown([...p.push(bytes.subarray(0, cut)), ...p.push(bytes.subarray(cut))])).toEqual(whole);
  }
  const p = make();
  const one: (SseEvent | SseDrop)[] = [];
  for (const b of bytes) one.push(...p.push(Uint8Array.of(b)));
  expect(shown(one)).toEqual(whole);
  return whole;
}

describe("BoundedSseParser", () => {
  it("frames events as the spec does, however the stream is cut", () => {
    const stream =
      "\uFEFF: a comment\n" +
      "event: ready\ndata: {}\n\n" +
      "data: first\r\n\r\n" +
      "id: 7\rdata:second\rdata:  two lines\r\r" +
      "data\n\n" +
      "retry: 100\nunknown: x\ndata: é\n\n" +
      "data: no end yet";
    expect(everySplit(stream)).toEqual([
      { type: "message", data: "first", id: "" },
      { type: "message", data: "second\n two lines", id: "7" },
      { type: "message", data: "", id: "7" },
      { type: "message", data: "é", id: "7" },
    ]);
  });

  it("drops an event over the cap as it arrives, keeps nothing of it, and reads on", () => {
    const p = parser({ max: 100 });
    expect(p.push(Buffer.from("data: " + "x".repeat(60)))).toEqual([]);
    expect(p.push(Buffer.from("y".repeat(10_000)))).toEqual([]);
    expect(shown(p.push(Buffer.from("\n\ndata: small\n\n")))).toEqual([
      { dropped: "larger than 100 bytes" },
      { type: "message", data: "small", id: "" },
    ]);
    expect(everySplit("data: " + "z".repeat(150) + "\n\ndata: ok\n\n", () => parser({ max: 100 }))).toEqual([
      { dropped: "larger than 100 bytes" },
      { type: "message", data: "ok", id: "" },
    ]);
  });

  it("asks screen once about the head of an event that reaches it, and drops the event it refuses", () => {
    const heads: string[] = [];
    const screen = (head: Buffer) => {
      heads.push(head.toString());
      return head.toString().startsWith("signed") ? undefined : "unsigned";
    };
    const p = parser({ head: 8, max: 1_000_000, screen });
    const events = shown([
      ...p.push(Buffer.from("data: short\n\n")),
      ...p.push(Buffer.from("data: unsigned and long " + "u".repeat(100_000) + "\n\n")),
      ...p.push(Buffer.from("data: signed and long\n\n")),
    ]);
    expect(events).toEqual([
      { type: "message", data: "short", id: "" },
      { dropped: "unsigned" },
      { type: "message", data: "signed and long", id: "" },
    ]);
    expect(heads).toEqual(["unsigned", "signed a"]);
  });

  it("discards the data of events nobody wants, and bounds names and ids", () => {
    const p = parser({ max: 10 });
    expect(shown(p.push(Buffer.from("event: ping\ndata: " + "p".repeat(1000) + "\n\n")))).toEqual([]);
    const long = shown(p.push(Buffer.from("id: " + "i".repeat(5000) + "\n" + "f".repeat(5000) + ": v\ndata: x\n\n")));
    expect(long).toEqual([{ type: "message", data: "x", id: "i".repeat(1024) }]);
  });
});
