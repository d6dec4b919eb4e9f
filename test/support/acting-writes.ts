// What report-only mode must never do: every write Steward sent the hub other than a check run
// (the report itself), as `METHOD path status`.
import type { SandboxStack } from "../../src/sandbox/stack.js";

const REPORT = /\/check-runs(\/\d+)?$/;

export function actingWrites(stack: SandboxStack, pathPart = ""): string[] {
  return stack.hub.control
    .requests()
    .filter((r) => r.method !== "GET" && r.method !== "HEAD" && r.path.includes(pathPart))
    .filter((r) => !REPORT.test(r.path))
    .map((r) => `${r.method} ${r.path} ${r.status}`);
}
