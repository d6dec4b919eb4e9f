// The impact section of `steward/config`: a pull request that changes a repository's `rerun` or
// `deployments` policy is told what the new policy would have done with that repository's recent
// requests, from the facts Steward stored when it decided them.
import type { Store } from "../../src/index.js";
import type { RerunPolicy } from "../rerun/policy.js";
import type { DeploymentsPolicy } from "../deployments/policy.js";
import { describeImpact, deploymentImpact, rerunImpact } from "../shared/impact.js";
import { readDeploymentFacts, readRerunFacts } from "../shared/impact-facts.js";
import type { FileReport } from "./decide.js";

const SIMULATED = ["rerun", "deployments"] as const;

/** Markdown to append to the summary, or undefined when no simulated section changed. */
export async function impactSection(store: Pick<Store, "list">, repository: string, files: readonly FileReport[]): Promise<string | undefined> {
  const lines: string[] = [];
  for (const f of files) {
    if (f.kind !== "policy" || !f.effective) continue;
    const changed = new Set(f.changes.map((c) => c.path.split(".")[0]));
    const rerun = changed.has("rerun") && f.effective.rerun ? await rerunImpact(f.effective.rerun as RerunPolicy, await readRerunFacts(store, repository)) : undefined;
    const deployments = changed.has("deployments") && "deployments" in f.effective ? deploymentImpact(f.effective.deployments as DeploymentsPolicy, await readDeploymentFacts(store, repository)) : undefined;
    lines.push(...describeImpact({ ...(rerun ? { rerun } : {}), ...(deployments ? { deployments } : {}) }));
  }
  if (lines.length === 0) return undefined;
  return ["", "### Impact", "", `With this change, ${lines.join("; ")}.`, "", `_Simulated on the facts Steward stored when it decided ${SIMULATED.join(" and ")} requests of ${repository}._`].join("\n");
}
