// The organisation's deployment gates in `steward/config`: a pull request that changes a
// repository's policy is told, at the key, where its file tries to loosen a gate the organisation
// sets for the repository's custom property values (the gate applies all the same).
import type { HandlerModule, InstallationOctokit, Problem } from "../../src/index.js";
import { analysePolicyText } from "../../src/policy/index.js";
import { fetchPropertyValues } from "../deployments/facts.js";
import { gateFindings } from "../deployments/org-gates.js";
import type { DeploymentsPolicy } from "../deployments/policy.js";
import type { Evaluation } from "./evaluate.js";

/** Adds the findings as warnings to each changed repository policy file (only when the org file has gates). */
export async function addGateFindings(
  octokit: InstallationOctokit,
  target: { owner: string; repo: string },
  evaluation: Evaluation,
  orgText: string | undefined,
  handlers: readonly HandlerModule<any>[],
): Promise<void> {
  if (!orgText) return;
  const orgValue = analysePolicyText(orgText, { file: "org", handlers }).value as { deployments?: DeploymentsPolicy } | undefined;
  const orgPolicy = orgValue?.deployments;
  if (!orgPolicy?.by_property?.length) return;
  const values = await fetchPropertyValues(octokit, target);
  for (const file of evaluation.files) {
    if (file.kind !== "policy" || file.head === undefined) continue;
    const analysis = analysePolicyText(file.head, { file: file.path, handlers, resolveSources: false });
    const own = (analysis.value as { deployments?: DeploymentsPolicy } | undefined)?.deployments;
    for (const finding of gateFindings(orgPolicy, own, values)) {
      const at = analysis.locate(finding.path);
      const problem: Problem = { file: file.path, line: at.line, column: at.column, message: finding.message, path: finding.path, severity: "warning" };
      file.problems.push(problem);
      evaluation.warnings++;
    }
  }
}
