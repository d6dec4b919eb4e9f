// The intake reads a delivery's routing fields without parsing the payload: on every real payload
// from @octokit/webhooks-examples, and on damaged and hand-made ones, it must agree with what a
// full JSON.parse gives, and refuse exactly the texts JSON.parse refuses (cut-off, garbled) or
// that are not one JSON object.
import { createRequire } from "node:module";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { routingFields } from "../../src/intake/routing.js";
import { parseDelivery } from "../../src/intake/delivery.js";

const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as { name: string; examples: unknown[] }[];
const texts = examples.flatMap((g) => g.examples.map((e) => JSON.stringify(e)));

/** What the intake recorded before, from a full parse. */
function expected(text: string) {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, message: "payload is not valid JSON" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, message: "payload must be a JSON object" };
  const p = value as Record<string, unknown>;
  const obj = (v: unknown) => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
  const id = obj(p.installation)?.id;
  const fullName = obj(p.repository)?.full_name;
  return {
    ok: true,
    fields: {
      action: typeof p.action === "string" ? p.action : undefined,
      installationId: typeof id === "number" && Number.isSafeInteger(id) ? id : undefined,
      repository: typeof fullName === "string" ? fullName : undefined,
    },
  };
}

describe("routing fields without a full parse", () => {
  it("agrees with JSON.parse on every example payload, compact and pretty-printed", () => {
    expect(texts.length).toBeGreaterThan(100);
    let withInstallation = 0;
    for (const text of texts) {
      const got = routingFields(text);
      expect(got).toEqual(expected(text));
      if (got.ok && got.fields.installationId !== undefined) withInstallation++;
      const pretty = JSON.stringify(JSON.parse(text), null, 2);
      expect(routingFields(pretty)).toEqual(expected(pretty));
    }
    expect(withInstallation).toBeGreaterThan(10);
  });

  it("refuses what JSON.parse refuses when a payload is cut off or a bracket or quote is lost", () => {
    // A fixed walk over the payloads (no randomness): cut at many points, drop one structural character.
    let refused = 0;
    for (const [n, text] of texts.slice(0, 40).entries()) {
      for (let k = 1; k < 12; k++) {
        const cut = text.slice(0, Math.floor((text.length * k) / 12) + n % 7);
        expect(routingFields(cut).ok).toBe(false);
        refused++;
      }
      for (const char of ["}", "]", '"']) {
        const at = text.indexOf(char, Math.floor(text.length / 3));
        if (at < 0) continue;
        const damaged = text.slice(0, at) + text.slice(at + 1);
        expect(routingFields(damaged).ok).toBe(expected(damaged).ok);
      }
    }
    expect(refused).toBeGreaterThan(400);
  });

  it("reads escapes, odd values and repeated keys as JSON.parse does", () => {
    const cases = [
      '{"action":"op\\u0065ned","repository":{"full_name":"a\\/b"},"installation":{"id":7}}',
      '{"action":1,"installation":{"id":"7"},"repository":{"full_name":null}}',
      '{"installation":{"id":[5]},"repository":[{"full_name":"x/y"}]}',
      '{"installation":{"id":1e3},"action":"a","action":"b"}',
      '{"installation":{"id":9007199254740993},"repository":{"full_name":"x/y"},"repository":3}',
      '{"installation":{"account":{"id":1}},"sender":{"id":2}}',
      ' \n{ "action" : "x" , "nested" : {"a":[1,{"b":"}]\\""}]} } \n',
      "{}",
      "[1,2]", "null", "42", '"text"', "{not json", "", "{", '{"a":1}x', '{"a":}', '{"a" 1}', '{"a":1,}', "{'a':1}",
    ];
    for (const text of cases) expect(routingFields(text), text).toEqual(expected(text));
  });

  it("the intake scans every payload, small or large, and hands no object tree on", () => {
    const headers = { "x-github-event": "workflow_run", "x-github-delivery": "d-1", "content-type": "application/json" };
    const small = texts.find((t) => t.includes('"installation"') && t.includes('"full_name"'))!;
    const big = JSON.stringify({ ...JSON.parse(small), padding: "x".repeat(256 * 1024) });
    const a = parseDelivery(headers, Buffer.from(small), new Date());
    const b = parseDelivery(headers, Buffer.from(big), new Date());
    if (!a.ok || !b.ok) throw new Error("both are deliveries");
    expect([a.delivery.action, a.delivery.installationId, a.delivery.repository]).toEqual(Object.values(expected(small).fields!));
    expect([b.delivery.action, b.delivery.installationId, b.delivery.repository]).toEqual([a.delivery.action, a.delivery.installationId, a.delivery.repository]);
    expect(b.delivery.installationId).toBeTypeOf("number");
    for (const text of [small, big]) {
      const cut = parseDelivery(headers, Buffer.from(text.slice(0, -2)), new Date());
      expect(cut).toEqual({ ok: false, refusal: { status: 400, message: "payload is not valid JSON" } });
    }
  });

  it("reads nested values the regular expression cannot hold in one go: long runs of strings, strings of millions of escapes", () => {
    const manyStrings = JSON.stringify({ action: "opened", files: Array.from({ length: 100_000 }, (_, i) => `f${i}{]"`), installation: { id: 9 } });
    // Millions of escapes in one nested string overflow the engine's backtracking stack: scanned quote by quote instead.
    const escapes = JSON.stringify({ repository: { full_name: "o/r", body: '\n"'.repeat(3_000_000) }, installation: { id: 7 }, action: "x" });
    for (const text of [manyStrings, escapes]) {
      expect(routingFields(text)).toEqual(expected(text));
      expect(routingFields(text.slice(0, -3))).toEqual({ ok: false, message: "payload is not valid JSON" });
    }
    // A nested string that never ends, with brackets after its opening quote.
    expect(routingFields('{"a":{"b":"x}]}')).toEqual({ ok: false, message: "payload is not valid JSON" });
    expect(routingFields('{"a":[1,{"b":"]"}],"action":"y"}')).toEqual(expected('{"a":[1,{"b":"]"}],"action":"y"}'));
  });

  it("scans strings with many escapes and backslashes before quotes as JSON.parse reads them", () => {
    // Quotes preceded by runs of backslashes decide where a string ends: odd runs escape the quote.
    const values = ['a\\"b', "\\\\", 'x"y"z', "\\", "end\\", "}]{[", '"', "\u0022"];
    for (const v of values) {
      const text = JSON.stringify({ nested: { s: v, list: [v, { v }] }, action: v, repository: { full_name: v, x: [v] }, installation: { id: 3 } });
      expect(routingFields(text), text).toEqual(expected(text));
    }
  });

  it("keeps none of the payload text in the fields it returns: a thousand kept fields hold kilobytes, not their payloads", () => {
    // A slice of a V8 string can be a view that keeps the whole text alive; routing fields outlive
    // the request (queued with the delivery, cache keys), so each would hold its payload.
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const kept: unknown[] = [];
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1000; i++) {
      const text = JSON.stringify({ action: "requested_action_long", padding: `${i}`.padEnd(20_000, "x"), repository: { full_name: "octo-organisation/octo-repository" } });
      const got = routingFields(text);
      if (!got.ok) throw new Error("a JSON object");
      kept.push(got.fields);
    }
    gc();
    const held = process.memoryUsage().heapUsed - before;
    // 1,000 texts of 20 KB are 20 MB; the fields alone are well under one.
    expect(held).toBeLessThan(4 * 1024 * 1024);
    expect(kept[999]).toEqual({ action: "requested_action_long", installationId: undefined, repository: "octo-organisation/octo-repository" });
  });
});
