// GitHub's example webhook payloads (@octokit/webhooks-examples, 4.3 MB of JSON), loaded by Node's
// own require as the bench loads them. Imported as a JSON module, the file went through Vite's
// transform into every test file that used it (about a second of each file's import) and was
// typed by tsc as one literal. Each user casts it to the shape it reads.
import { createRequire } from "node:module";

export const examples: unknown = createRequire(import.meta.url)("@octokit/webhooks-examples");
