// Reading the decision facts the simulation runs on, per repository or for every repository.
import type { Store } from "../../src/index.js";
import { rerunFactsPrefix, type RerunFactRecord } from "../rerun/record.js";
import { deploymentFactsPrefix, type DeploymentFactRecord } from "../deployments/record.js";

export async function readRerunFacts(store: Pick<Store, "list">, repository?: string): Promise<RerunFactRecord[]> {
  return (await store.list<RerunFactRecord>(rerunFactsPrefix(repository))).map((e) => e.value);
}

export async function readDeploymentFacts(store: Pick<Store, "list">, repository?: string): Promise<DeploymentFactRecord[]> {
  return (await store.list<DeploymentFactRecord>(deploymentFactsPrefix(repository))).map((e) => e.value);
}
