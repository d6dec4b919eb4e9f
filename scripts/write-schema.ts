// `npm run schema`: regenerates config/steward.schema.json (and the document schemas and
// config/defaults.yml) from the built-in handler modules. A test fails when they drift.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { builtinHandlers } from "../handlers/index.js";
import { generatedConfigFiles } from "../src/policy/schema.js";

const configDir = fileURLToPath(new URL("../config/", import.meta.url));
for (const [name, content] of generatedConfigFiles(builtinHandlers, (v) => stringify(v))) {
  writeFileSync(configDir + name, content);
  process.stdout.write(`wrote config/${name}\n`);
}
