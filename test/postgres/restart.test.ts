// A PostgreSQL restart in the middle of a run loses nothing answered 2xx: three replicas on a
// server of the test's own, runs arriving through a round-robin balancer, the server restarted
// (pg_ctl restart -m fast) while they flow. Deliveries refused meanwhile (503) are asked for
// again by the redelivery sweeper. Afterwards every delivery a replica answered 2xx is recorded,
// and every run got its re-run and its check run exactly once.
import { describe, expect, it } from "vitest";
import { leakGuard } from "../support/leak-guard.js";
import { runReplicas } from "../support/replicas-harness.js";
import { postgresBackend } from "./replicas-support.js";
import { privateServerUnavailable, startPrivateServer } from "./private-server.js";

if (privateServerUnavailable) console.warn(`PostgreSQL restart test skipped: ${privateServerUnavailable}`);

describe.skipIf(privateServerUnavailable !== undefined)("a PostgreSQL restart under load", () => {
  it("loses nothing answered 2xx; every run's effects happen exactly once", async () => {
    const server = await startPrivateServer();
    try {
      let restarts = 0;
      const result = await runReplicas({
        backend: postgresBackend(server.url, "steward"),
        replicas: 3,
        holderKills: 0,
        async disrupt() {
          await server.restart();
          restarts++;
        },
        writeIntervalMs: 200,
        runEveryMs: 300,
        minRuns: 15,
        onOutput: (label, text) => {
          leakGuard.output(label, text);
          // What went wrong in a replica, if anything did (warnings and errors only).
          for (const line of text
            .split("\n")
            .filter((l) => /"level":(40|50|60)/.test(l))
            .slice(-10))
            console.log(`${label}: ${line.slice(0, 400)}`);
        },
        log: (line) => console.log(line),
        deadlineMs: 240_000,
      });
      console.log(
        `postgres restart: ${result.runs} runs, answers ${JSON.stringify(result.statuses)}, ` +
          `${result.answered2xx} answered 2xx, ${result.seconds.toFixed(1)} s`,
      );
      expect(restarts).toBe(1);
      expect(result.answered2xx).toBeGreaterThan(0);
      expect(result.answeredNotRecorded).toEqual([]);
      expect(result.lostEffects).toEqual([]);
      expect(result.duplicatedEffects).toEqual([]);
      // One mint per installation holds while the database is up (the SIGKILL test). While it
      // is down, a replica with no token of its own mints one rather than stall its work
      // (coordination/postgres/token-cache.ts), so at most one mint per replica.
      expect(result.mints).toBeGreaterThanOrEqual(1);
      expect(result.mints).toBeLessThanOrEqual(3);
    } finally {
      await server.stop();
    }
  }, 600_000);
});
