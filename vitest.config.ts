import { defineConfig } from "vitest/config";
import { defaultServerConditions } from "vite";

export default defineConfig({
  // Workspace packages (the sandbox hub) are imported from their TypeScript sources (their "steward-source"
  // export, as tsconfig.json's customConditions), so a test sees the last edit without a rebuild.
  resolve: { conditions: ["steward-source", ...defaultServerConditions] },
  ssr: { resolve: { conditions: ["steward-source", ...defaultServerConditions] } },
  test: {
    include: ["test/**/*.test.ts", "handlers/**/*.test.ts", "packages/*/test/**/*.test.ts"],
    // test/bench holds the benchmark (`npm run bench`) and one smoke test of it with tiny counts.
    exclude: ["node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Fails any test file after which a secret is found in plaintext (output, check runs, stores).
    setupFiles: ["test/support/leak-guard.ts"],
  },
});
