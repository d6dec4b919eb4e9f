import { defineConfig } from "vitest/config";
import { defaultServerConditions } from "vite";

// Packages resolve as Node resolves them when Steward runs: bundlers' "module" condition is not
// Node's, and some packages' "module" builds do not load in Node at all (@opentelemetry/api 1.9's
// extensionless imports, which prom-client requires).
const conditions = ["steward-source", ...defaultServerConditions.filter((c) => c !== "module")];

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
    // Most test files wait on processes, sockets and services rather than compute, so three
    // workers keep two cores busy (Vitest's default on two cores is one). Every test holds under
    // that load: they wait for conditions, never for time.
    maxWorkers: 3,
    // Fails any test file after which a secret is found in plaintext (output, check runs, stores).
    setupFiles: ["test/support/leak-guard.ts"],
  },
});
