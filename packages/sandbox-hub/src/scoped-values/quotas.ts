// GitHub's documented limits on Actions secrets and variables, as the hub enforces them: at most
// 1,000 organisation, 100 repository and 100 environment secrets; 1,000 organisation, 500 repository
// and 100 environment variables; 48 KB per value. A write past them is refused with 422.
import { HubError } from "../core/types.js";
import type { Scope } from "./scopes.js";

const COUNT: Record<"Secret" | "Variable", Record<Scope["kind"], number>> = {
  Secret: { org: 1000, repo: 100, env: 100 },
  Variable: { org: 1000, repo: 500, env: 100 },
};
export const MAX_VALUE_BYTES = 48 * 1024;

/** Refuse a new item in a scope that already holds `count`, or a value over 48 KB. */
export function assertWithinLimits(
  resource: "Secret" | "Variable",
  scope: Scope,
  o: { creating: boolean; count: number; value?: string },
): void {
  const limit = COUNT[resource][scope.kind];
  if (o.creating && o.count >= limit) {
    throw new HubError(422, "Validation Failed", [
      {
        resource,
        field: "name",
        code: "custom",
        message: `Maximum number of ${resource.toLowerCase()}s (${limit}) for this ${scope.kind === "env" ? "environment" : scope.kind === "org" ? "organization" : "repository"} reached`,
      },
    ]);
  }
  if (o.value !== undefined && Buffer.byteLength(o.value) > MAX_VALUE_BYTES) {
    throw new HubError(422, "Validation Failed", [
      { resource, field: "value", code: "custom", message: `${resource} value is larger than 48 KB` },
    ]);
  }
}
