// Hostile intake: fast-check generates webhook requests (headers, signatures, bodies, methods,
// paths) and sends them over real HTTP to Steward's intake backed by the real SQLite store.
// Only documented codes may come back; nothing answers 500; the process stays up; memory stays flat.
import { request, Agent } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { pino } from "pino";
import { examples } from "../support/webhook-examples.js";
import { createStewardHttp } from "../../src/intake/server.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { signBody } from "../../src/intake/signature.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/store.js";

export const WEBHOOK_PATH = "/api/github/webhooks";
/** Answers the intake documents (README "Intake"): accepted, duplicate, refusals, limits, draining. */
export const DOCUMENTED = new Set([200, 202, 400, 401, 404, 405, 408, 413, 415, 431, 503]);

const realPayloads: { event: string; body: string }[] = (examples as { name: string; examples: unknown[] }[])
  .flatMap((e) => e.examples.slice(0, 2).map((x) => ({ event: e.name, body: JSON.stringify(x) })))
  .filter((p) => p.body.length < 200_000);

export interface Intake {
  url: URL;
  store: SqliteStore;
  secret: string;
  close(): Promise<void>;
}

export async function startIntake(
  opts: { maxBodyBytes?: number; headersTimeoutMs?: number; requestTimeoutMs?: number } = {},
): Promise<Intake> {
  const dir = await mkdtemp(join(tmpdir(), "steward-fuzz-"));
  const logger = pino({ level: "silent" });
  const store = openSqliteStore(dir, { logger });
  const secret = randomBytes(24).toString("hex");
  const http = createStewardHttp({
    webhookPath: WEBHOOK_PATH,
    secrets: [secret],
    intake: {
      record: (d) => store.deliveries.record(d),
      ready: () => store.ready(),
      depth: () => store.deliveries.depth(),
    },
    logger,
    metrics: createMetrics({ defaultMetrics: false }),
    ...(opts.maxBodyBytes ? { maxBodyBytes: opts.maxBodyBytes } : {}),
    timeouts: {
      headersTimeoutMs: opts.headersTimeoutMs ?? 1_000,
      requestTimeoutMs: opts.requestTimeoutMs ?? 2_000,
      keepAliveTimeoutMs: 1_000,
    },
  });
  await new Promise<void>((r) => http.server.listen(0, "127.0.0.1", r));
  const port = (http.server.address() as AddressInfo).port;
  return {
    url: new URL(`http://127.0.0.1:${port}${WEBHOOK_PATH}`),
    store,
    secret,
    async close() {
      http.server.closeAllConnections();
      await new Promise((r) => http.server.close(r));
      store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
}

const token = fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{0,40}$/);
const headerValue = fc.stringMatching(/^[\x20-\x7e]{0,80}$/);

function requestArbitrary(secret: string): fc.Arbitrary<FuzzRequest> {
  const payload = fc.oneof(
    fc.constantFrom(...realPayloads).map((p) => ({ event: p.event, body: Buffer.from(p.body) })),
    fc.json().map((j) => ({ event: "push", body: Buffer.from(j) })),
    fc.uint8Array({ maxLength: 2048 }).map((b) => ({ event: "push", body: Buffer.from(b) })),
    fc
      .constantFrom(...realPayloads)
      .chain((p) => fc.nat(p.body.length).map((cut) => ({ event: p.event, body: Buffer.from(p.body.slice(0, cut)) }))),
    fc
      .constantFrom(...realPayloads)
      .map((p) => ({ event: p.event, body: Buffer.from(`payload=${encodeURIComponent(p.body)}`), form: true })),
  );
  return fc
    .record({
      payload,
      method: fc.oneof(
        { arbitrary: fc.constant("POST"), weight: 9 },
        { arbitrary: fc.constantFrom("GET", "PUT", "DELETE", "HEAD", "PATCH"), weight: 1 },
      ),
      path: fc.oneof(
        { arbitrary: fc.constant(WEBHOOK_PATH), weight: 9 },
        { arbitrary: fc.constantFrom("/", "/healthz", "/readyz", "/metrics", `${WEBHOOK_PATH}/`), weight: 1 },
        { arbitrary: token.map((t) => `/${t}`), weight: 1 },
      ),
      event: fc.oneof(
        { arbitrary: fc.constant(undefined), weight: 8 },
        { arbitrary: token, weight: 1 },
        { arbitrary: fc.constant(""), weight: 1 },
      ),
      // "fresh": a new delivery id at send time (fast-check's uuids repeat, which only tests duplicates).
      id: fc.oneof(
        { arbitrary: fc.constant("fresh"), weight: 6 },
        { arbitrary: fc.uuid(), weight: 2 },
        { arbitrary: token, weight: 1 },
        { arbitrary: fc.constant(""), weight: 1 },
      ),
      signature: fc.constantFrom("valid", "valid", "valid", "valid", "valid", "wrong", "missing", "garbage", "sha1"),
      garbage: headerValue,
      contentType: fc.constantFrom(
        "application/json",
        "application/json",
        "application/x-www-form-urlencoded",
        "text/plain",
        "",
        "application/json; charset=utf-8",
      ),
      extra: fc.dictionary(
        token.filter(
          (t) => t.length > 0 && !/^(host|content-length|transfer-encoding|connection|expect|upgrade)$/i.test(t),
        ),
        headerValue,
        { maxKeys: 3 },
      ),
    })
    .map((r) => {
      const isForm = "form" in r.payload;
      const headers: Record<string, string> = { ...r.extra };
      if (r.event !== undefined)
        headers["x-github-event"] = r.event === "" ? "" : r.event.length > 0 ? r.event : r.payload.event;
      else headers["x-github-event"] = r.payload.event;
      headers["x-github-delivery"] = r.id;
      const ct = isForm && r.contentType === "application/json" ? "application/x-www-form-urlencoded" : r.contentType;
      if (ct) headers["content-type"] = ct;
      if (r.signature === "valid") headers["x-hub-signature-256"] = signBody(secret, r.payload.body);
      else if (r.signature === "wrong") headers["x-hub-signature-256"] = signBody("not-the-secret", r.payload.body);
      else if (r.signature === "garbage") headers["x-hub-signature-256"] = r.garbage;
      else if (r.signature === "sha1") headers["x-hub-signature"] = `sha1=${r.garbage}`;
      return { method: r.method, path: r.path, headers, body: r.payload.body };
    });
}

function send(url: URL, agent: Agent, r: FuzzRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: r.method,
        path: r.path,
        headers: { ...r.headers, "content-length": String(r.body.length) },
        agent,
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(r.body);
  });
}

export interface FuzzResult {
  requests: number;
  byStatus: Record<string, number>;
  undocumented: { status: number; method: string; path: string }[];
  accepted: number;
  storedAccepted: number;
  rssBeforeMb: number;
  rssAfterMb: number;
}

/** Send `runs` generated requests (after `warmup` more); a fixed seed replays the same requests. */
export async function fuzzIntake(
  intake: Intake,
  opts: { runs: number; warmup?: number; seed: number },
): Promise<FuzzResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const byStatus: Record<string, number> = {};
  const undocumented: FuzzResult["undocumented"] = [];
  const accepted = new Set<string>();
  let requests = 0;
  const arbitrary = requestArbitrary(intake.secret);
  const one = async (generated: FuzzRequest) => {
    const r =
      generated.headers["x-github-delivery"] === "fresh"
        ? { ...generated, headers: { ...generated.headers, "x-github-delivery": randomUUID() } }
        : generated;
    const status = await send(intake.url, agent, r);
    requests++;
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    if (!DOCUMENTED.has(status)) undocumented.push({ status, method: r.method, path: r.path });
    if (status === 202) accepted.add(r.headers["x-github-delivery"]!);
    return DOCUMENTED.has(status);
  };
  try {
    const warmup = opts.warmup ?? Math.min(2_000, Math.ceil(opts.runs / 5));
    for (const r of fc.sample(arbitrary, { numRuns: warmup, seed: opts.seed + 1 })) await one(r);
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    await fc.assert(fc.asyncProperty(arbitrary, one), { numRuns: opts.runs, seed: opts.seed, endOnFailure: true });
    global.gc?.();
    const rssAfter = process.memoryUsage().rss;
    let storedAccepted = 0;
    for (const id of accepted) if (await intake.store.deliveries.getDelivery(id)) storedAccepted++;
    return {
      requests,
      byStatus,
      undocumented,
      accepted: accepted.size,
      storedAccepted,
      rssBeforeMb: Math.round(rssBefore / 1e6),
      rssAfterMb: Math.round(rssAfter / 1e6),
    };
  } finally {
    agent.destroy();
  }
}

/**
 * A slow-loris client: sends header bytes one at a time every `gapMs`. Resolves with how many
 * bytes it got to send before the server cut it off, and what it answered.
 */
export function slowLoris(
  url: URL,
  opts: { gapMs: number; maxBytes: number; body?: boolean },
): Promise<{ sent: number; answer: string; cut: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    const head = opts.body
      ? `POST ${url.pathname} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\nX-GitHub-Delivery: ${randomBytes(8).toString("hex")}\r\nX-Hub-Signature-256: sha256=00\r\nContent-Length: 100000\r\n\r\n`
      : "";
    const drip = opts.body
      ? "{".repeat(opts.maxBytes)
      : `POST ${url.pathname} HTTP/1.1\r\nHost: x\r\nX-Slow: ${"a".repeat(opts.maxBytes)}`;
    let sent = 0;
    let answer = "";
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (cut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ sent, answer, cut });
    };
    socket.on("data", (d) => (answer += d.toString()));
    socket.on("close", () => finish(true));
    socket.on("error", () => finish(true));
    socket.on("connect", () => {
      if (head) socket.write(head);
      const tick = () => {
        if (done) return;
        if (sent >= drip.length) return finish(false);
        socket.write(drip[sent++]!);
        timer = setTimeout(tick, opts.gapMs);
      };
      tick();
    });
  });
}

/** Stream `bytes` of body to the webhook path; resolves with the status (or 0 when cut before one). */
export function oversized(url: URL, bytes: number, secret: string): Promise<{ status: number; sentBytes: number }> {
  return new Promise((resolve) => {
    let sentBytes = 0;
    const req = request({
      host: url.hostname,
      port: url.port,
      method: "POST",
      path: url.pathname,
      headers: {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-github-delivery": randomBytes(8).toString("hex"),
        "x-hub-signature-256": signBody(secret, "x"),
        "content-length": String(bytes),
      },
    });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let status = 0;
    req.on("response", (res) => {
      status = res.statusCode ?? 0;
      res.resume();
      res.on("end", () => resolve({ status, sentBytes }));
      res.on("error", () => resolve({ status, sentBytes }));
    });
    req.on("error", () => resolve({ status, sentBytes }));
    const pump = () => {
      while (sentBytes < bytes) {
        sentBytes += chunk.length;
        if (!req.write(chunk)) return void req.once("drain", pump);
      }
      req.end();
    };
    pump();
  });
}
