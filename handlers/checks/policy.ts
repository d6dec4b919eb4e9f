// Section `checks` of .github/steward.yml.
import type { PolicySection } from "../../src/index.js";

export interface ChecksPolicy {
  /** Report a `steward/config` check run on pull requests that change policy files. */
  config: boolean;
}

export const checksSection: PolicySection<ChecksPolicy> = {
  key: "checks",
  // On where the section is absent: policy files are checked in every repository unless `checks.config: false`.
  enabledByDefault: true,
  schema: {
    type: "object",
    additionalProperties: false,
    description: "The steward/config check on pull requests that change Steward's policy files.",
    properties: {
      config: {
        type: "boolean",
        description: "Report steward/config on pull requests that change a policy file (default true).",
      },
    },
  },
  defaults: { config: true },
};
