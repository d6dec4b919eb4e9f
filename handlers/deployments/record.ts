// Decision facts of deployment requests, kept so a policy change can be simulated against real
// requests ("the last 50 deployment requests: 3 held that were approved"). One record per gate: the
// request and facts of its first evaluation, and the first and latest decisions.
import type { Store } from "../../src/index.js";
import type { Decision, DeploymentRequest, Facts } from "./decide.js";
import type { Gate } from "./waits.js";
import type { OrgGate } from "./org-gates.js";

export const DEPLOYMENT_FACTS_TTL_MS = 30 * 24 * 3_600_000;

export interface DeploymentFactRecord {
  repository: string;
  runId: number;
  /** The request, `requestedAt` as ISO text. */
  request: Omit<DeploymentRequest, "requestedAt"> & { requestedAt: string };
  facts: Facts;
  /**
   * The organisation gates that applied to the request (the decision had to satisfy them as well as
   * the repository's rule): a simulation applies them as the decision did. Absent in older records.
   */
  gates?: OrgGate[];
  /** When it was first evaluated (the clock the decision used). */
  at: string;
  first: Decision;
  /** The latest decision: `approve`/`reject` once answered. */
  last: Decision;
}

export function deploymentFactsPrefix(repository?: string): string {
  return `facts:deployments:${repository ? `${repository.toLowerCase()}:` : ""}`;
}

export async function recordDeploymentFacts(
  store: Store,
  gate: Gate,
  request: DeploymentRequest,
  facts: Facts,
  now: Date,
  decision: Decision,
  gates: readonly OrgGate[] = [],
): Promise<void> {
  const repository = `${gate.owner}/${gate.repo}`;
  const key = `${deploymentFactsPrefix(repository)}${gate.runId}:${gate.environment.toLowerCase()}`;
  const previous = await store.get<DeploymentFactRecord>(key);
  const record: DeploymentFactRecord = previous
    ? { ...previous, last: decision }
    : {
        repository,
        runId: gate.runId,
        request: { ...request, requestedAt: request.requestedAt.toISOString() },
        facts,
        ...(gates.length ? { gates: [...gates] } : {}),
        at: now.toISOString(),
        first: decision,
        last: decision,
      };
  await store.set(key, record, { ttlMs: DEPLOYMENT_FACTS_TTL_MS });
}
