// A mix of real webhook payloads (from @octokit/webhooks-examples), 1-30 KB each,
// signed the way GitHub signs them. Delivery ids are set per request by the load
// generator so every request is a new delivery.
import { createHmac } from "node:crypto";
import { createRequire } from "node:module";

export interface SignedPayload {
  event: string;
  body: string;
  signature: string;
  bytes: number;
}

/**
 * The API's world the payloads are about (hub-server.mjs prints it): each example is moved onto
 * this installation, organisation and repository, as a delivery of an installed app names them,
 * so the handlers' token and policy reads reach things that exist.
 */
export interface BenchWorld {
  installation: { id: number };
  organization: { login: string; id: number; node_id: string };
  repository: { id: number; node_id: string; name: string; full_name: string; private: boolean; owner: Record<string, unknown> };
}

const EVENTS = ["push", "pull_request", "workflow_run", "workflow_job", "check_run", "check_suite", "issues", "issue_comment", "deployment_protection_rule", "installation_repositories"];

type Example = Record<string, unknown> & { repository?: Record<string, unknown>; organization?: Record<string, unknown>; repositories_added?: unknown[] };

function moveOnto(example: Example, world: BenchWorld): Example {
  const { id, node_id, name, full_name, private: isPrivate } = world.repository;
  const installation = { id: world.installation.id, node_id: `MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u${world.installation.id}` };
  // Deliveries about the installation itself carry its account (installation_repositories).
  const out: Example = { ...example, installation: example.installation && "account" in (example.installation as object) ? { ...installation, account: world.repository.owner } : installation };
  if (example.repository) out.repository = { ...example.repository, id, node_id, name, full_name, private: isPrivate, owner: world.repository.owner };
  if (example.organization) out.organization = { ...example.organization, ...world.organization };
  if (Array.isArray(example.repositories_added)) out.repositories_added = example.repositories_added.map(() => ({ id, node_id, name, full_name, private: isPrivate }));
  return out;
}

export function benchPayloads(secret: string, world?: BenchWorld): SignedPayload[] {
  const require = createRequire(import.meta.url);
  const examples = require("@octokit/webhooks-examples") as { name: string; examples: Example[] }[];
  const out: SignedPayload[] = [];
  for (const group of examples) {
    if (!EVENTS.includes(group.name)) continue;
    for (const example of group.examples) {
      const original = Buffer.byteLength(JSON.stringify(example));
      if (original < 1024 || original > 30 * 1024) continue;
      const body = JSON.stringify(world ? moveOnto(example, world) : example);
      out.push({ event: group.name, body, bytes: Buffer.byteLength(body), signature: "sha256=" + createHmac("sha256", secret).update(body).digest("hex") });
    }
  }
  return out;
}
