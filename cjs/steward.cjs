// `require("steward")` lands here: Steward is an ES module package. Say so plainly instead of
// Node's "Cannot require() ES Module ... in a cycle" or a missing-export error further down.
throw new Error(
  'steward is an ES module package and cannot be loaded with require(). Use `import { defineHandler } from "steward"` ' +
    'from an ES module (a .mjs/.mts file, or "type": "module" in your package.json), or `await import("steward")` from CommonJS.',
);
