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

const EVENTS = ["push", "pull_request", "workflow_run", "workflow_job", "check_run", "check_suite", "issues", "issue_comment", "deployment_protection_rule", "installation_repositories"];

export function benchPayloads(secret: string): SignedPayload[] {
  const require = createRequire(import.meta.url);
  const examples = require("@octokit/webhooks-examples") as { name: string; examples: unknown[] }[];
  const out: SignedPayload[] = [];
  for (const group of examples) {
    if (!EVENTS.includes(group.name)) continue;
    for (const example of group.examples) {
      const body = JSON.stringify(example);
      const bytes = Buffer.byteLength(body);
      if (bytes < 1024 || bytes > 30 * 1024) continue;
      out.push({ event: group.name, body, bytes, signature: "sha256=" + createHmac("sha256", secret).update(body).digest("hex") });
    }
  }
  return out;
}
