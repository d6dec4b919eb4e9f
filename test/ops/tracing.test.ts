// Traces end to end: a delivery the sandbox hub sends to a running Steward is exported over
// OTLP/HTTP (JSON) to a receiver on 127.0.0.1 as one trace: its receipt, its time queued, its
// run, the policy load, the handler and each GitHub API call, each under the span it belongs to,
// and log lines carry the trace and span they were written in. No secret and no payload text
// is in what was exported (the leak guard reads the exporter's requests as well).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import type { Steward } from "../../src/app.js";
import { checks } from "../../handlers/index.js";
import { deliveryTraceIds } from "../../src/log/trace.js";
import { collectingLogger } from "../service/helpers.js";
import { signIn } from "../console/session.js";

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpValue }[];
  status?: { code?: number };
}
interface Export {
  headers: Record<string, string | string[] | undefined>;
  body: string;
  resourceSpans: {
    resource?: { attributes?: { key: string; value: OtlpValue }[] };
    scopeSpans: { scope?: { name?: string }; spans: OtlpSpan[] }[];
  }[];
}

const exports: Export[] = [];
let receiver: Server;
let stack: SandboxStack;
let logs: () => string;

function attr(span: OtlpSpan, key: string): string | number | boolean | undefined {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  if (!value) return undefined;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return value.stringValue ?? value.boolValue;
}

const spans = () => exports.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      if (req.method === "POST" && req.url === "/v1/traces") {
        exports.push({ headers: req.headers, body, ...(JSON.parse(body) as Pick<Export, "resourceSpans">) });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      } else res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const { port } = receiver.address() as AddressInfo;
  vi.stubEnv("OTEL_EXPORTER_OTLP_ENDPOINT", `http://127.0.0.1:${port}`);
  vi.stubEnv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
  vi.stubEnv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=steward-tests");
  vi.stubEnv("OTEL_SERVICE_NAME", "steward-under-test");
  vi.stubEnv("OTEL_BSP_SCHEDULE_DELAY", "200");
  const collected = collectingLogger("info");
  logs = collected.output;
  stack = await startSandboxStack({ handlers: [checks], logger: collected.logger });
});

afterAll(async () => {
  await stack?.close();
  vi.unstubAllEnvs();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
});

describe("OpenTelemetry traces over OTLP", () => {
  it("exports one trace per delivery with its receipt, queue time, run, policy load, handler and API calls", async () => {
    const pr = stack.hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "traced-policy",
      title: "Traced policy change",
      files: { ".github/steward.yml": "rerun:\n  enabled: true\n  max_attempts: 3\n" },
    });
    await stack.hub.control.settled();
    await (stack.steward as Steward).engine.idle();
    const delivery = stack.hub.control
      .deliveries()
      .find(
        (d) =>
          d.event === "pull_request" &&
          (d.request.payload.pull_request as { number?: number } | undefined)?.number === pr.number,
      );
    expect(delivery).toBeDefined();
    const guid = delivery!.guid;
    const { traceId, spanId: receiptId } = deliveryTraceIds(guid);

    // The batch goes out within its schedule; Steward's close would flush the rest.
    const named = (name: string) => spans().filter((s) => s.traceId === traceId && s.name === name);
    await vi.waitFor(() => expect(named("POST /repos/{owner}/{repo}/check-runs").length).toBeGreaterThan(0), {
      timeout: 30_000,
      interval: 100,
    });
    const trace = spans().filter((s) => s.traceId === traceId);
    const one = (name: string) => {
      const found = trace.filter((s) => s.name === name);
      expect(found, name).toHaveLength(1);
      return found[0]!;
    };

    // The receipt is the trace's root, with the delivery's ids.
    const receipt = one("webhook receive");
    expect(receipt.spanId).toBe(receiptId);
    expect(receipt.parentSpanId ?? "").toBe("");
    expect(attr(receipt, "github.delivery_id")).toBe(guid);
    expect(attr(receipt, "github.event")).toBe("pull_request");
    expect(attr(receipt, "http.response.status_code")).toBe(202);
    expect(one("webhook verify").parentSpanId).toBe(receiptId);
    expect(one("webhook record").parentSpanId).toBe(receiptId);
    expect(one("delivery queued").parentSpanId).toBe(receiptId);

    // The run joins the receipt's trace; the policy load and the handler are under it.
    const run = one("delivery run");
    expect(run.parentSpanId).toBe(receiptId);
    expect(attr(run, "steward.attempt")).toBe(1);
    expect(attr(run, "steward.decision")).toBe("done");
    expect(typeof attr(run, "steward.queue_seconds")).toBe("number");
    const policy = one("policy load");
    expect(policy.parentSpanId).toBe(run.spanId);
    const handler = one("handler checks");
    expect(handler.parentSpanId).toBe(run.spanId);
    expect(attr(handler, "steward.attempt")).toBe(1);
    expect(attr(handler, "steward.outcome")).toBe("done");

    // Every API call: method and route template, status, the rate limit left; under the work that made it.
    const calls = trace.filter((s) => /^(GET|POST|PATCH|PUT|DELETE) \//.test(s.name));
    expect(calls.length).toBeGreaterThan(1);
    for (const call of calls) {
      expect(call.kind).toBe(3); // client
      // An installation token minted for a call is a call inside that call.
      const parents = call.name.endsWith("/access_tokens")
        ? calls.map((c) => c.spanId)
        : [policy.spanId, handler.spanId];
      expect(parents).toContain(call.parentSpanId);
      expect(attr(call, "url.template")).toBe(call.name.slice(call.name.indexOf(" ") + 1));
      expect(attr(call, "url.template")).not.toMatch(/acme|web|\?/);
      expect(attr(call, "http.response.status_code")).toEqual(expect.any(Number));
    }
    const write = named("POST /repos/{owner}/{repo}/check-runs")[0]!;
    expect(write.parentSpanId).toBe(handler.spanId);
    expect(attr(write, "http.response.status_code")).toBe(201);
    expect(attr(write, "github.ratelimit.remaining")).toEqual(expect.any(Number));
    expect(calls.some((c) => c.parentSpanId === policy.spanId)).toBe(true);

    // The standard variables are honoured: the service's name and the exporter's headers.
    const resource = exports[0]!.resourceSpans[0]!.resource!.attributes!;
    expect(resource.find((a) => a.key === "service.name")?.value.stringValue).toBe("steward-under-test");
    expect(exports.every((e) => e.headers["x-tenant"] === "steward-tests")).toBe(true);

    // Log lines carry the trace and the span they were written in.
    const lines = logs()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const done = lines.find((l) => l.msg === "handler checks done" && l.trace_id === traceId);
    expect(done?.span_id).toBe(handler.spanId);
    const recorded = lines.find((l) => l.msg === "delivery recorded" && l.deliveryId === guid);
    expect(recorded).toMatchObject({ trace_id: traceId, span_id: receiptId });

    // The console's delivery page names the trace, to look it up in the tracing backend.
    const owner = await signIn((stack.steward as Steward).url, "octo-admin");
    const page = await owner.visit(`/console/deliveries/${encodeURIComponent(guid)}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<code>${traceId}</code> (receipt span <code>${receiptId}</code>)`);

    // Nothing of the payload and no credential: not the title, not the policy file's text.
    const sent = exports.map((e) => e.body).join("\n");
    expect(sent).not.toContain("Traced policy change");
    expect(sent).not.toContain("max_attempts");
    expect(sent).not.toMatch(/gh[opsu]_[A-Za-z0-9]{8,}/);
    expect(sent).not.toContain(stack.config.webhookSecrets[0]!);
    expect(sent).not.toMatch(/BEGIN [A-Z ]*PRIVATE KEY|authorization/i);
  });
});
