// The periodic sync: scheduled at service start for every installation, it repairs drift
// with no push, and schedules the next period.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import type { Steward } from "../../../src/app.js";
import secrets from "../../../handlers/secrets/index.js";

const ORG = "acme";
const VALUE = "scheduled-sync-value";
let stack: SandboxStack;

beforeAll(async () => {
  process.env.STEWARD_SCHEDULE_TOKEN = VALUE;
  process.env.STEWARD_SECRET_SOURCES = "acme=env:STEWARD_SCHEDULE_";
  stack = await startSandboxStack({ handlers: [secrets], env: { STEWARD_SYNC_INTERVAL: "2s" } });
});
afterAll(async () => {
  await stack?.close();
});

const steward = () => stack.steward as unknown as Steward;

/** Polls `test`: generous (30 s for a 2 s period), as CI's 2 cores are shared with other work. */
async function until(what: string, test: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

it("schedules a sync per installation at start, and the scheduled sync repairs drift and schedules the next", async () => {
  const inst = stack.hub.control.installation(ORG)!;
  const periodic = async () =>
    (await steward().store.tasks.listTasks()).filter(
      (t) => t.handler === "secrets" && t.key.startsWith(`secrets/sync/${inst.id}/`),
    );
  await until("a periodic task is scheduled", async () => (await periodic()).length > 0);
  const firstKey = (await periodic())[0]!.key;

  // The policy arrives without a push event reaching Steward: only the schedule can apply it.
  stack.hub.control.setWebhookUrl(undefined);
  stack.hub.control.pushFiles({
    owner: ORG,
    repo: ".github",
    files: {
      ".github/steward/secrets.yml":
        "secrets:\n  SCHEDULED: { from: env:STEWARD_SCHEDULE_TOKEN, repositories: [api] }\n",
    },
  });
  await stack.hub.control.settled();
  stack.hub.control.setWebhookUrl(stack.webhookUrl);
  const s = stack.hub.domains.secrets;
  await until(
    "the scheduled sync wrote the secret",
    () => s.openedValue({ owner: ORG, repo: "api" }, "SCHEDULED") === VALUE,
  );
  // ...and recorded its write (the drift baseline is bounded by the API's time of that write).
  const recorded = async () =>
    (await steward().store.kv.get("secrets/target/acme/secret/repo/api/SCHEDULED")) !== undefined;
  await until("the write is recorded", recorded);

  // updated_at has one-second resolution: an edit in the very second of Steward's write is indistinguishable.
  stack.hub.control.advanceClock(3_000);
  s.setSecretOutOfBand({ owner: ORG, repo: "api" }, "SCHEDULED", "changed by hand");
  await until(
    "the next scheduled sync repaired it",
    () => s.openedValue({ owner: ORG, repo: "api" }, "SCHEDULED") === VALUE,
  );
  // The chain goes on: a later period is pending.
  const pending = (await periodic()).filter((t) => t.status === "pending").map((t) => t.key);
  expect(pending.length).toBeGreaterThan(0);
  expect(pending).not.toContain(firstKey);
}, 150_000);
