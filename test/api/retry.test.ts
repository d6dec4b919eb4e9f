// The API client's retries against a real HTTP server on 127.0.0.1 that answers each request
// from a script: what is tried again (5xx, dropped connections, GraphQL server errors), what
// is final (the 4xx a retry gets again), how many times, and a wait cut short by a stop.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Octokit } from "@octokit/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FINAL_STATUSES, retryFailedRequests } from "../../src/api/retry.js";
import { runWithSignal } from "../../src/lifecycle/abort-scope.js";
import type { InstallationOctokit } from "../../src/api/types.js";

type Answer = number | "drop" | ((res: ServerResponse) => void);

let server: Server;
let base: string;
let script: Answer[];
let seen: { method: string; url: string }[];
let onRequest: () => void;

beforeEach(async () => {
  seen = [];
  onRequest = () => {};
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url! });
      onRequest();
      const answer = script.shift() ?? 200;
      if (answer === "drop") return void req.socket.destroy();
      if (typeof answer === "function") return answer(res);
      res.writeHead(answer, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify(answer < 300 ? { ok: true } : { message: `status ${answer}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function client(retries = 3, o: { unitMs?: number; signal?: AbortSignal } = {}): InstallationOctokit {
  const octokit = new Octokit({ baseUrl: base }) as unknown as InstallationOctokit;
  retryFailedRequests(octokit, { retries, unitMs: o.unitMs ?? 5, signal: o.signal });
  return octokit;
}

const get = (octokit: InstallationOctokit, request: Record<string, unknown> = {}) =>
  octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "web", request });

describe("retryFailedRequests", () => {
  it("tries a 5xx and a dropped connection again, and answers with the first success", async () => {
    script = [502, "drop", 503, 200];
    const response = await get(client());
    expect(response.status).toBe(200);
    expect(response.data).toEqual({ ok: true });
    expect(seen.map((r) => r.url)).toEqual(Array(4).fill("/repos/acme/web"));
  });

  it("gives up after its retries with the last failure", async () => {
    script = [500, 500, 500, 500, 200];
    await expect(get(client(3))).rejects.toMatchObject({ status: 500 });
    expect(seen).toHaveLength(4);
  });

  it("a request's own retries win over the client's (none for a creating POST)", async () => {
    script = [500, 500, 200];
    await expect(get(client(3), { retries: 0 })).rejects.toMatchObject({ status: 500 });
    expect(seen).toHaveLength(1);
    script = [500, 200];
    expect((await get(client(0), { retries: 1 })).status).toBe(200);
    expect(seen).toHaveLength(3);
  });

  it("answers a retry would only get again are final", async () => {
    for (const status of FINAL_STATUSES) {
      seen = [];
      script = [status, 200];
      await expect(get(client())).rejects.toMatchObject({ status });
      expect(seen).toHaveLength(1);
    }
    // A 429 the throttling did not take on is tried again, as other 4xx are.
    script = [429, 200];
    seen = [];
    expect((await get(client())).status).toBe(200);
    expect(seen).toHaveLength(2);
  });

  it("a GraphQL answer saying the query went wrong on the server's side is tried again", async () => {
    const broken = (res: ServerResponse) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ data: null, errors: [{ message: "Something went wrong while executing your query. Please try again later." }] }));
    };
    script = [broken, 200];
    const octokit = client();
    expect((await octokit.request("POST /graphql", { query: "{ viewer { login } }" })).data).toEqual({ ok: true });
    expect(seen.map((r) => r.method)).toEqual(["POST", "POST"]);
    script = [broken, broken];
    await expect(client(1).request("POST /graphql", { query: "{ viewer { login } }" })).rejects.toMatchObject({ status: 500, message: expect.stringMatching(/Something went wrong/) });
  });

  it("a stop during the wait ends it at once, and nothing more is sent", async () => {
    script = [503, 200];
    const work = new AbortController();
    // Waits of an hour: the test ends only because the stop cuts them short.
    const octokit = client(3, { unitMs: 3_600_000 });
    onRequest = () => setImmediate(() => work.abort(new Error("shutting down")));
    await expect(runWithSignal(work.signal, () => get(octokit))).rejects.toMatchObject({ name: "AbortError", message: "stopped: shutting down" });
    expect(seen).toHaveLength(1);

    const hard = new AbortController();
    const stopped = client(3, { unitMs: 3_600_000, signal: hard.signal });
    script = [503, 200];
    seen = [];
    onRequest = () => setImmediate(() => hard.abort(new Error("hard stop")));
    await expect(get(stopped)).rejects.toMatchObject({ name: "AbortError" });
    expect(seen).toHaveLength(1);
  });
});
