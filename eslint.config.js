// Lint: the one-way path of the architecture (docs/architecture.md) as import rules, so a change
// that breaks it fails `npm test` instead of waiting for a reviewer to notice.
import { readdirSync } from "node:fs";
import tseslint from "typescript-eslint";

const handlerNames = readdirSync(new URL("./handlers/", import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== "shared")
  .map((d) => d.name);

/** `no-restricted-imports` patterns for the given import paths (matched anywhere in a relative import). */
function forbid(message, ...folders) {
  return { group: folders.flatMap((f) => [`**/${f}`, `**/${f}/**`]), message };
}

// gitignore semantics: a file is re-included only if its folder is, hence the folder steps.
const throughEntries = {
  group: [
    "**/src/**",
    "!**/src/index.js",
    "!**/src/testing.js",
    "!**/src/policy/",
    "**/src/policy/*",
    "!**/src/policy/index.js",
  ],
  message:
    "Handlers reach the core only through its package entries: src/index.ts, src/testing.ts, src/policy/index.ts.",
};

const coreKnowsHandlerList = {
  group: ["**/handlers/**", "!**/handlers/index.js"],
  message:
    "The core knows handlers only through their list, handlers/index.ts; a handler contributes through the handler contract (src/handler.ts).",
};

function restrict(files, ...patterns) {
  return { files, rules: { "no-restricted-imports": ["error", { patterns }] } };
}

export default tseslint.config(
  { ignores: ["dist/**", "**/dist/**", "node_modules/**", "coverage/**", "cjs/**", "packages/*/dist/**"] },
  {
    files: ["**/*.ts", "**/*.mts"],
    languageOptions: { parser: tseslint.parser, ecmaVersion: "latest", sourceType: "module" },
    linterOptions: { reportUnusedDisableDirectives: "error" },
  },
  // ESLint applies the last matching setting of a rule, so each folder's rule repeats the core's.
  restrict(["src/**/*.ts"], coreKnowsHandlerList),
  restrict(
    ["src/store/**/*.ts"],
    coreKnowsHandlerList,
    forbid(
      "The store holds records; it never reaches up the path (intake, engine, API client, dispatch, modules, console, CLI, handlers).",
      "intake",
      "engine",
      "api",
      "dispatch",
      "modules",
      "console",
      "cli",
      "handlers",
    ),
  ),
  restrict(
    ["src/api/**/*.ts"],
    coreKnowsHandlerList,
    forbid(
      "The API client declares the interfaces it needs (src/api/types.ts); the store and coordination implement them, the client never imports them.",
      "store",
      "coordination",
    ),
  ),
  restrict(
    ["src/config/**/*.ts"],
    coreKnowsHandlerList,
    forbid("Configuration is parsed before policies exist; it never imports policy code.", "policy"),
  ),
  ...handlerNames.map((name) =>
    restrict(
      [`handlers/${name}/**/*.ts`],
      throughEntries,
      forbid(
        "A handler never imports another handler; what two handlers share goes to handlers/shared or through the contract.",
        ...handlerNames.filter((other) => other !== name).map((other) => `handlers/${other}`),
        ...handlerNames.filter((other) => other !== name).map((other) => `../${other}`),
      ),
    ),
  ),
  restrict(
    ["handlers/shared/**/*.ts"],
    throughEntries,
    forbid(
      "handlers/shared is what several handlers read; it never imports a single handler.",
      ...handlerNames.map((n) => `../${n}`),
      ...handlerNames.map((n) => `handlers/${n}`),
    ),
  ),
);
