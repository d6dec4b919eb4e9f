import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { defaultServerConditions } from "vite";

// Packages resolve as Node resolves them when Steward runs: bundlers' "module" condition is not
// Node's, and some packages' "module" builds do not load in Node at all (@opentelemetry/api 1.9's
// extensionless imports, which prom-client requires).
const conditions = ["steward-source", ...defaultServerConditions.filter((c) => c !== "module")];

// The files that run longest (replicas and torture driving child processes, lease lapses on three
// backends, the store contract on six, the bench's servers, a sync of hundreds of repositories) go
// first, those that start Steward processes between those that do not. Vitest orders files by
// their last durations, which a fresh clone (CI) has none of: it then runs larger files first, and
// these are short files driving long harnesses, so they came last and the run ended on one of them
// with the other workers idle.
const LONGEST = [
  "test/bench/bench.test.ts",
  "test/coordination/contract.test.ts",
  "test/handlers/secrets/scale.test.ts",
  "test/torture/crash.test.ts",
  "test/handlers/secrets/sync.test.ts",
  "test/postgres/replicas.test.ts",
  "test/redis/replicas.test.ts",
  "test/store/contract.test.ts",
  "test/package/pack.test.ts",
  "test/deploy/container.test.ts",
  "test/postgres/restart.test.ts",
  "test/redis/cluster.test.ts",
  "test/console/browse.test.ts",
];

/** Vitest's order, with the longest files known (LONGEST) moved to the front. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONGEST.findIndex((path) => f.moduleId.endsWith(`/${path}`));
      return i < 0 ? LONGEST.length : i;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  // Workspace packages (the sandbox hub) are imported from their TypeScript sources (their "steward-source"
  // export, as tsconfig.json's customConditions), so a test sees the last edit without a rebuild.
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ["test/**/*.test.ts", "handlers/**/*.test.ts", "packages/*/test/**/*.test.ts"],
    // test/bench holds the benchmark (`npm run bench`) and one smoke test of it with tiny counts.
    exclude: ["node_modules/**"],
    // Generous: many tests start Steward or the CLI as a child process, which on two loaded cores
    // (CI's, with other work beside it) has taken up to 48 s. A test waits for conditions, so a
    // passing one never pays this; only a hung one does.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Most test files wait on processes, sockets and services rather than compute: with three
    // workers the suite kept little more than half of CI's two cores busy, so it runs four (Vitest's
    // default on two cores is one; decision 0020). Every test holds under that load: they wait
    // for conditions, never for time.
    maxWorkers: 4,
    sequence: { sequencer: LongestFirst },
    // Fails any test file after which a secret is found in plaintext (output, check runs, stores).
    setupFiles: ["test/support/leak-guard.ts"],
  },
});
