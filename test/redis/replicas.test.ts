// Three replicas on one Redis, the replica holding the installation's write slot killed on
// purpose (again and again) and restarted: writes resume within the liveness bound, the
// spacing holds across replicas, every run gets exactly one re-run and one check run, the
// whole run mints one installation token (shared, sealed in Redis: no token in Redis in
// plaintext), and /metrics shows the replicas and what they hold.
import { describe, it } from "vitest";
import { redisUp } from "./support.js";
import { proveHolderKills } from "../support/replicas-proof.js";
import { redisBackend } from "./replicas-support.js";

/** Generous on purpose (the machine is shared); the figures measured are printed. */
const LIVENESS_BOUND_MS = 15_000;
const WRITE_INTERVAL_MS = 400;

describe.skipIf(!redisUp)("replicas on one Redis", () => {
  it("the write slot's holder killed three times: writes resume, spacing holds, nothing lost or doubled, one token mint", async () => {
    await proveHolderKills(redisBackend(), {
      label: "replicas",
      replicas: 3,
      holderKills: 3,
      writeIntervalMs: WRITE_INTERVAL_MS,
      livenessBoundMs: LIVENESS_BOUND_MS,
      holdsInMetrics: true,
      minRuns: 12,
      // GitHub's ~520-character installation tokens, end to end.
      tokens: { format: "stateless" },
    });
  }, 600_000);
});
