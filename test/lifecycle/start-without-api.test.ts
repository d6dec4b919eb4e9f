// Start-up does not depend on the API: with GitHub unreachable, or refusing the app's key,
// the intake records deliveries at once; the work that needs the API retries in the
// background, and a rejected credential is reported once, naming what to fix.
import { describe, expect, it } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { appKey } from "../support/app-key.js";
import { collectingLogger, deliveryId, postDelivery, testConfig } from "../service/helpers.js";
import { perTest } from "../service/per-test.js";
import { until } from "./support.js";

const push = JSON.stringify(
  (examples as { name: string; examples: unknown[] }[]).find((e) => e.name === "push")!.examples[0],
);
const fastBackoff = { minMs: 20, maxMs: 100 };
/** The discard port: nothing listens there, and no other test binds it (a port freed a moment ago might be). */
const UNREACHABLE_API = "http://127.0.0.1:9";

const scope = perTest();

function lines(output: string): { level: number; msg: string; [k: string]: unknown }[] {
  return output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));
}

describe("start without the API", () => {
  it("with GITHUB_API_URL unreachable: starts, answers 202 and /readyz 200, and retries start-up work in the background", async () => {
    const dir = await scope.dataDir("noapi");
    const { logger, output } = collectingLogger("info");
    const steward = await scope.steward({
      config: testConfig({ privateKey: appKey().privateKey, apiUrl: UNREACHABLE_API, dataDir: dir }),
      logger,
      api: { retries: 0 },
      startBackoff: fastBackoff,
    });
    expect((await postDelivery(steward.url, { body: push, id: deliveryId(), event: "push" })).status).toBe(202);
    expect((await fetch(`${steward.url}/readyz`)).status).toBe(200);
    await until(
      () => lines(output()).filter((l) => l.msg.includes("secrets could not start yet")).length >= 2,
      "handler start retries",
      output,
    );
    await until(
      () => lines(output()).some((l) => l.msg === "GitHub API not reachable yet; retrying in the background"),
      "credential check retry",
      output,
    );
    const retry = lines(output()).find((l) => l.msg.includes("secrets could not start yet"))!;
    expect(retry).toMatchObject({ handler: "secrets", attempt: 1 });
    expect(typeof retry.retryInMs).toBe("number");
    const metrics = await (await fetch(`${steward.url}/metrics`)).text();
    expect(metrics).toMatch(/steward_handler_start_status\{handler="secrets"\} 0/);
    expect(metrics).toMatch(/steward_app_credential_status -1/);
    expect(metrics).toMatch(/steward_deliveries_dead 0/);
  });

  it("with a key GitHub does not accept: one clear message naming APP_ID and PRIVATE_KEY and GET /app's answer, never blaming a handler", async () => {
    const hub = await scope.hub();
    const dir = await scope.dataDir("badkey");
    const { logger, output } = collectingLogger("info");
    const steward = await scope.steward({
      // The hub's app id, with a private key that is not the app's.
      config: testConfig({
        privateKey: appKey().privateKey,
        appId: Number(hub.env.APP_ID),
        apiUrl: hub.url,
        dataDir: dir,
      }),
      logger,
      api: { retries: 0 },
      startBackoff: fastBackoff,
    });
    expect((await postDelivery(steward.url, { body: push, id: deliveryId(), event: "push" })).status).toBe(202);
    expect((await fetch(`${steward.url}/readyz`)).status).toBe(200);
    await until(
      () => hub.control.requests().filter((r) => r.path === "/app" && r.status === 401).length >= 3,
      "three rejected GET /app",
      output,
    );
    const errors = lines(output()).filter((l) => l.level >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.msg).toContain("GitHub rejected the app credential: GET /app answered 401");
    expect(errors[0]!.msg).toContain(`APP_ID (${hub.env.APP_ID})`);
    expect(errors[0]!.msg).toContain("PRIVATE_KEY");
    expect(output()).not.toMatch(/handler module "secrets" failed/);
    expect(lines(output()).filter((l) => l.level >= 40 && String(l.handler ?? "") !== "")).toEqual([]);
    const metrics = await (await fetch(`${steward.url}/metrics`)).text();
    expect(metrics).toMatch(/steward_app_credential_status 0/);
  });
});
