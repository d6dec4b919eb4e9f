import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "handlers/**/*.test.ts", "packages/*/test/**/*.test.ts"],
    exclude: ["test/bench/**", "node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Fails any test file after which a secret is found in plaintext (output, check runs, stores).
    setupFiles: ["test/support/leak-guard.ts"],
  },
});
