// Three replicas on PostgreSQL alone (no Redis), the replica holding the installation's write
// slot killed on purpose (again and again) and restarted: writes resume within the liveness
// bound, the spacing holds across replicas, every run gets exactly one re-run and one check
// run, the whole run mints one installation token (shared, sealed in PostgreSQL: no token in
// any table in plaintext), and /metrics shows the replicas and what they hold.
import { describe, expect, it } from "vitest";
import { proveHolderKills } from "../support/replicas-proof.js";
import { postgresBackend } from "./replicas-support.js";
import { dropSchema, postgresUp, postgresUrl, uniqueSchema } from "./support.js";

/** Generous on purpose (the machine is shared); the figures measured are printed. */
const LIVENESS_BOUND_MS = 15_000;
const WRITE_INTERVAL_MS = 400;

describe.skipIf(!postgresUp)("replicas on PostgreSQL alone", () => {
  it("the write slot's holder killed three times: writes resume, spacing holds, nothing lost or doubled, one token mint", async () => {
    const schema = uniqueSchema();
    try {
      const result = await proveHolderKills(postgresBackend(postgresUrl, schema), {
        label: "postgres replicas",
        replicas: 3,
        holderKills: 3,
        writeIntervalMs: WRITE_INTERVAL_MS,
        livenessBoundMs: LIVENESS_BOUND_MS,
        holdsInMetrics: true,
        minRuns: 12,
        // GitHub's ~520-character installation tokens, end to end.
        tokens: { format: "stateless" },
      });
      expect(result.answered2xx).toBeGreaterThan(0);
    } finally {
      await dropSchema(schema);
    }
  }, 600_000);
});
