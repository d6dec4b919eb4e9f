// The impact section of `steward/config`: a pull request that changes a repository's policy section
// of a handler that simulates (rerun, deployments) is told what the new policy would have done with
// that repository's recent requests, from the facts Steward stored when it decided them.
import type { HandlerModule, Store } from "../../src/index.js";
import { simulatedHandlers, simulatePolicy } from "../../src/policy/index.js";
import type { FileReport } from "./decide.js";

/** Markdown to append to the summary, or undefined when no simulated section changed. */
export async function impactSection(
  store: Pick<Store, "list">,
  repository: string,
  files: readonly FileReport[],
  handlers: readonly HandlerModule<any>[],
): Promise<string | undefined> {
  const lines: string[] = [];
  for (const f of files) {
    if (f.kind !== "policy" || !f.effective) continue;
    const changed = new Set(f.changes.map((c) => String(c.path.split(".")[0])));
    lines.push(...(await simulatePolicy(handlers, f.effective, { store, repository, only: changed })));
  }
  if (lines.length === 0) return undefined;
  const simulated = simulatedHandlers(handlers).map((h) => h.name);
  return [
    "",
    "### Impact",
    "",
    `With this change, ${lines.join("; ")}.`,
    "",
    `_Simulated on the facts Steward stored when it decided ${simulated.join(" and ")} requests of ${repository}._`,
  ].join("\n");
}
