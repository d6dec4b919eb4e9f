import { afterEach, describe, expect, it } from "vitest";
import { connect } from "node:net";
import { examples } from "../support/webhook-examples.js";
import { signBody, verifySignature } from "../../src/intake/signature.js";
import { deliveryId, postDelivery, startHttp, type RunningHttp } from "./helpers.js";

// GitHub's published test vector for X-Hub-Signature-256.
const VECTOR_SECRET = "It's a Secret to Everybody";
const VECTOR_PAYLOAD = "Hello, World!";
const VECTOR_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

const workflowRun = JSON.stringify(
  (examples as { name: string; examples: unknown[] }[]).find((e) => e.name === "workflow_run")!.examples[0],
);

let running: RunningHttp | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe("signature", () => {
  it("verifies GitHub's published vector", () => {
    expect(signBody(VECTOR_SECRET, VECTOR_PAYLOAD)).toBe(VECTOR_SIGNATURE);
    expect(verifySignature([VECTOR_SECRET], Buffer.from(VECTOR_PAYLOAD), VECTOR_SIGNATURE)).toBe(true);
    expect(verifySignature(["other"], Buffer.from(VECTOR_PAYLOAD), VECTOR_SIGNATURE)).toBe(false);
    expect(verifySignature([VECTOR_SECRET], Buffer.from("Hello, World?"), VECTOR_SIGNATURE)).toBe(false);
    expect(verifySignature([VECTOR_SECRET], Buffer.from(VECTOR_PAYLOAD), "sha1=757107ea")).toBe(false);
    expect(verifySignature([VECTOR_SECRET], Buffer.from(VECTOR_PAYLOAD), undefined)).toBe(false);
  });

  it("accepts the vector over HTTP (then refuses the non-object payload with 400, not 401)", async () => {
    running = await startHttp({ secrets: [VECTOR_SECRET] });
    const good = await postDelivery(running.url, { body: VECTOR_PAYLOAD, signature: VECTOR_SIGNATURE });
    expect(good.status).toBe(400);
    const bad = await postDelivery(running.url, {
      body: VECTOR_PAYLOAD,
      signature: VECTOR_SIGNATURE.replace("757", "758"),
    });
    expect(bad.status).toBe(401);
  });
});

describe("webhook intake over HTTP", () => {
  it("records a real workflow_run payload and answers 202 only after recording", async () => {
    running = await startHttp();
    const id = deliveryId();
    const res = await postDelivery(running.url, { body: workflowRun, event: "workflow_run", id });
    expect(res.status).toBe(202);
    expect(res.headers.get("content-type")).toMatch(/application\/json/);
    const stored = running.intake.deliveries.get(id)!;
    expect(stored.event).toBe("workflow_run");
    expect(stored.action).toBe("completed");
    expect(stored.repository).toBe(JSON.parse(workflowRun).repository.full_name);
    expect(stored.installationId).toBeUndefined();
    const installed = deliveryId();
    const body = JSON.stringify({ ...JSON.parse(workflowRun), installation: { id: 42, node_id: "x" } });
    expect((await postDelivery(running.url, { body, event: "workflow_run", id: installed })).status).toBe(202);
    expect(running.intake.deliveries.get(installed)!.installationId).toBe(42);
    expect(JSON.parse(stored.payload)).toEqual(JSON.parse(workflowRun));
    expect(stored.headers["x-github-delivery"]).toBe(id);
    expect(Object.keys(stored.headers)).not.toContain("x-hub-signature-256");
  });

  it("answers 200 to a duplicate delivery id and does not record it again", async () => {
    running = await startHttp();
    const id = deliveryId();
    expect((await postDelivery(running.url, { body: workflowRun, id })).status).toBe(202);
    const again = await postDelivery(running.url, { body: workflowRun, id });
    expect(again.status).toBe(200);
    expect(running.intake.deliveries.size).toBe(1);
  });

  it("accepts form-encoded deliveries, signed over the raw form body", async () => {
    running = await startHttp();
    const id = deliveryId();
    const body = new URLSearchParams({ payload: workflowRun }).toString();
    const res = await postDelivery(running.url, {
      body,
      id,
      contentType: "application/x-www-form-urlencoded",
      event: "workflow_run",
    });
    expect(res.status).toBe(202);
    expect(JSON.parse(running.intake.deliveries.get(id)!.payload)).toEqual(JSON.parse(workflowRun));
    // Signing the unwrapped JSON instead of the raw body must fail.
    const wrong = await postDelivery(running.url, {
      body,
      contentType: "application/x-www-form-urlencoded",
      signature: signBody("test-secret", workflowRun),
    });
    expect(wrong.status).toBe(401);
    const noField = await postDelivery(running.url, {
      body: "other=1",
      contentType: "application/x-www-form-urlencoded",
    });
    expect(noField.status).toBe(400);
  });

  it("accepts either secret during a rotation", async () => {
    running = await startHttp({ secrets: ["old-secret", "new-secret"] });
    expect((await postDelivery(running.url, { body: workflowRun, secret: "old-secret" })).status).toBe(202);
    expect((await postDelivery(running.url, { body: workflowRun, secret: "new-secret" })).status).toBe(202);
    expect((await postDelivery(running.url, { body: workflowRun, secret: "neither" })).status).toBe(401);
  });

  it("answers 400 for missing headers and non-object payloads", async () => {
    running = await startHttp();
    const noEvent = await postDelivery(running.url, { body: "{}", event: null });
    expect(noEvent.status).toBe(400);
    expect(noEvent.body.message).toMatch(/X-GitHub-Event/);
    const noId = await postDelivery(running.url, { body: "{}", id: null });
    expect(noId.status).toBe(400);
    expect(noId.body.message).toMatch(/X-GitHub-Delivery/);
    for (const body of ["[1,2]", "null", "42", '"text"']) {
      expect([(await postDelivery(running.url, { body })).body.message]).toEqual(["payload must be a JSON object"]);
    }
    // A cut-off or garbled body is told apart from one that is JSON but not an object.
    for (const body of ["{not json", workflowRun.slice(0, -3), workflowRun.slice(1), "{'a':1}", '{"a":1}x', ""]) {
      const res = await postDelivery(running.url, { body });
      expect([res.status, res.body.message]).toEqual([400, "payload is not valid JSON"]);
    }
    expect(running.intake.deliveries.size).toBe(0);
  });

  it("answers 401 for a missing or wrong signature", async () => {
    running = await startHttp();
    expect((await postDelivery(running.url, { body: "{}", signature: null })).status).toBe(401);
    expect((await postDelivery(running.url, { body: "{}", signature: "sha256=" + "0".repeat(64) })).status).toBe(401);
    expect((await postDelivery(running.url, { body: "{}", signature: "garbage" })).status).toBe(401);
    expect(running.intake.deliveries.size).toBe(0);
  });

  it("answers 415 for other content types", async () => {
    running = await startHttp();
    expect((await postDelivery(running.url, { body: "{}", contentType: "text/plain" })).status).toBe(415);
    expect((await postDelivery(running.url, { body: "{}", contentType: null })).status).toBe(415);
  });

  it("answers 404 elsewhere and 405 with Allow for other methods", async () => {
    running = await startHttp();
    const notFound = await fetch(`${running.url}/nope`);
    expect(notFound.status).toBe(404);
    expect(await notFound.json()).toEqual({ message: "not found" });
    const get = await fetch(`${running.url}/api/github/webhooks`);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    const put = await fetch(`${running.url}/healthz`, { method: "PUT", body: "x" });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, HEAD");
  });

  it("answers 503 when the store cannot record, and nothing is lost silently", async () => {
    running = await startHttp();
    running.intake.failWith = new Error("database is locked");
    const res = await postDelivery(running.url, { body: workflowRun });
    expect(res.status).toBe(503);
    expect(res.body.message).toBeTruthy();
    running.intake.failWith = undefined;
    expect((await postDelivery(running.url, { body: workflowRun })).status).toBe(202);
  });

  it("answers 503 while shutting down, and readiness turns 503", async () => {
    running = await startHttp();
    expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
    running.surface.beginDrain();
    expect((await postDelivery(running.url, { body: workflowRun })).status).toBe(503);
    expect((await fetch(`${running.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${running.url}/healthz`)).status).toBe(200);
    expect(running.intake.deliveries.size).toBe(0);
  });

  it("survives malformed HTTP without crashing", async () => {
    running = await startHttp();
    const reply = await rawExchange(running.port, "GARBAGE\r\n\r\n");
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    expect((await fetch(`${running.url}/healthz`)).status).toBe(200);
  });
});

/** Send raw bytes, collect everything the server answers until it closes. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(text));
    let out = "";
    socket.on("data", (d) => (out += d.toString()));
    socket.on("end", () => resolve(out));
    socket.on("error", (e) => (out ? resolve(out) : reject(e)));
  });
}

const MiB = 1024 * 1024;

/**
 * Stream `total` bytes of body with back-pressure, stopping as soon as the server answers
 * or closes. Resolves with the answer and how many body bytes were actually sent.
 */
function streamLargeBody(
  port: number,
  total: number,
  chunked: boolean,
  stopOnAnswer = true,
): Promise<{ status: number; sent: number }> {
  const body = Buffer.from(JSON.stringify({ x: "y" }));
  const signature = signBody("test-secret", body);
  const head = [
    "POST /api/github/webhooks HTTP/1.1",
    "Host: 127.0.0.1",
    "Content-Type: application/json",
    "X-GitHub-Event: push",
    `X-GitHub-Delivery: ${deliveryId()}`,
    `X-Hub-Signature-256: ${signature}`,
    chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${total}`,
    "",
    "",
  ].join("\r\n");
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  return new Promise((resolve, reject) => {
    let answer = "";
    let sent = 0;
    let stopped = false;
    const socket = connect(port, "127.0.0.1");
    const finish = () => {
      if (stopped) return;
      stopped = true;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
      socket.destroy();
      status ? resolve({ status, sent }) : reject(new Error(`no answer after ${sent} bytes`));
    };
    socket.on("data", (d) => {
      answer += d.toString();
      if (stopOnAnswer && answer.includes("\r\n\r\n")) finish();
    });
    socket.on("end", () => stopOnAnswer && finish());
    socket.on("close", finish);
    socket.on("error", finish);
    const pump = () => {
      while (!stopped && sent < total) {
        const piece = chunked
          ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")])
          : chunk;
        sent += chunk.length;
        if (!socket.write(piece)) return void socket.once("drain", () => setImmediate(pump));
      }
      if (!stopped && chunked) socket.write("0\r\n\r\n");
    };
    socket.on("connect", () => {
      socket.write(head);
      pump();
    });
  });
}

describe("body size limit", () => {
  it("refuses a declared 30 MiB body with 413 and stops reading: a sender that ignores the answer is cut off", async () => {
    running = await startHttp();
    // The client keeps sending after the answer; only the server closing the connection stops it.
    const { status, sent } = await streamLargeBody(running.port, 30 * MiB, false, false);
    expect(status).toBe(413);
    expect(sent, `sent ${sent}`).toBeLessThan(30 * MiB);
    expect(running.intake.deliveries.size).toBe(0);
  });

  it("lets every oversized sender read its 413, even one that keeps sending and reads its answer late", async () => {
    running = await startHttp();
    // A loaded client: it writes as fast as it can but does not read for a while. Closing a socket
    // with unread request bytes resets it, and a reset loses the answer the client has not read.
    const lateReader = (i: number) =>
      new Promise<string>((resolve) => {
        const socket = connect(running!.port, "127.0.0.1");
        let answer = "";
        let sent = 0;
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = () => {
          while (!socket.destroyed && sent < 30 * MiB) {
            sent += chunk.length;
            if (!socket.write(chunk)) return void socket.once("drain", pump);
          }
        };
        socket.pause();
        setTimeout(() => socket.resume(), 1_000);
        socket.on("data", (d) => {
          answer += d.toString();
          // The status line read is the answer received: the server's linger need not be waited out.
          if (/^HTTP\/1\.1 \d{3}/.test(answer)) {
            resolve(answer);
            socket.destroy();
          }
        });
        socket.on("error", () => undefined);
        socket.on("close", () => resolve(answer));
        socket.on("connect", () => {
          socket.write(
            `POST /api/github/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\nX-GitHub-Delivery: late-${i}\r\n` +
              `X-Hub-Signature-256: sha256=${"0".repeat(64)}\r\nContent-Length: ${30 * MiB}\r\n\r\n`,
          );
          pump();
        });
      });
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => lateReader(i)));
    expect(answers.map((a) => /^HTTP\/1\.1 (\d{3})/.exec(a)?.[1] ?? `no answer (${a.length} bytes)`)).toEqual(
      answers.map(() => "413"),
    );
  });

  it("cuts a chunked 64 MiB body off at the limit and answers 413", async () => {
    running = await startHttp();
    // Past the 25 MiB limit by more than loopback's socket buffers hold (several MiB each way), so
    // a sender that wrote it all was read past the limit, however late the answer comes.
    const { status, sent } = await streamLargeBody(running.port, 64 * MiB, true);
    expect(status).toBe(413);
    expect(sent, `sent ${sent}`).toBeLessThan(64 * MiB);
    expect(running.intake.deliveries.size).toBe(0);
  });

  it("cuts off a body that arrives too slowly (request timeout)", async () => {
    running = await startHttp({ timeouts: { requestTimeoutMs: 300, headersTimeoutMs: 300 } });
    const reply = await new Promise<string>((resolve) => {
      const socket = connect(running!.port, "127.0.0.1", () => {
        socket.write(
          "POST /api/github/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n" +
            `X-GitHub-Delivery: ${deliveryId()}\r\nX-Hub-Signature-256: sha256=${"0".repeat(64)}\r\nContent-Length: 100\r\n\r\n{`,
        );
      });
      let out = "";
      socket.on("data", (d) => (out += d.toString()));
      socket.on("close", () => resolve(out));
      socket.on("error", () => undefined);
    });
    // Either a 408 answer or a closed connection: never a recorded delivery, never a hang.
    expect(reply === "" || /^HTTP\/1\.1 408/.test(reply)).toBe(true);
    expect(running.intake.deliveries.size).toBe(0);
  });
});
