// Section `checks` of .github/steward.yml.
import { ACT_MODE_SCHEMA, type ActMode, type PolicySection } from "../../src/index.js";

export interface ChecksPolicy {
  /** Report a `steward/config` check run on pull requests that change policy files. */
  config: boolean;
  /**
   * `report`: the verdict is reached and shown as it would be, but a failing one concludes
   * `neutral` (it blocks no merge) and says what it would have concluded.
   */
  mode?: ActMode;
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
      mode: {
        ...ACT_MODE_SCHEMA,
        description: "report: a failing steward/config concludes neutral and says it would have failed (default act).",
      },
    },
  },
  defaults: { config: true },
};
