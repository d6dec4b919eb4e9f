// What the steward/config end-to-end tests share: waiting until the hub's deliveries were run,
// and reading the steward/config check runs the hub holds for a commit.
import type { Steward } from "../../../src/app.js";
import type { SandboxStack } from "../../../src/sandbox/stack.js";

export interface ConfigRun {
  conclusion: string;
  output: { title: string; summary: string };
  annotations: { path: string; start_line: number; start_column?: number; message: string; annotation_level: string }[];
}

/** The hub's deliveries answered and every one of them run by Steward. */
export async function settle(stack: SandboxStack): Promise<void> {
  await stack.hub.control.settled();
  await (stack.steward as unknown as Steward).engine.idle();
}

export function configRuns(stack: SandboxStack, owner: string, repo: string, sha: string): ConfigRun[] {
  return stack.hub.domains.checks.checkRuns({ owner, repo, sha, name: "steward/config" }) as unknown as ConfigRun[];
}
