// The sandbox hub as Steward uses it: the app installed with exactly the permissions and events
// of Steward's manifest (`app.yml`), so the hub refuses what a real installation would refuse
// and a handler needing a permission the manifest lacks fails in the tests, not in production.
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { packageFile } from "../package-root.js";
import { appManifestOf, unionGrant, type Permissions } from "../modules/app-manifest.js";
import { createHub as createBareHub, type AppGrant, type CreateHubOptions, type HubHandle } from "@steward/sandbox-hub";

export type { CreateHubOptions, HubEnv, HubHandle } from "@steward/sandbox-hub";

const manifest = parseYaml(readFileSync(packageFile("app.yml"), "utf8")) as {
  default_permissions: AppGrant["permissions"];
  default_events: string[];
};

export const STEWARD_APP: AppGrant = {
  permissions: { ...manifest.default_permissions },
  events: [...manifest.default_events],
};
export const STEWARD_PERMISSIONS = STEWARD_APP.permissions;

export function createHub(opts: CreateHubOptions = {}): Promise<HubHandle> {
  return createBareHub({ app: STEWARD_APP, ...opts });
}

/**
 * What the sandbox installs the app with when Steward hosts `modulePaths`: Steward's manifest
 * while any built-in handler runs (only what reading policy needs when none does), plus each
 * hosted app's own app.yml, so an app's events are delivered and its calls allowed as they would
 * be for an app registered with the merged manifest.
 */
export function sandboxGrant(opts: { builtins: "all" | "none" | string[]; modulePaths: readonly string[] }): AppGrant {
  let grant: { events: string[]; permissions: Permissions } =
    opts.builtins === "none"
      ? { events: [], permissions: { metadata: "read", contents: "read" } }
      : { events: [...STEWARD_APP.events], permissions: { ...(STEWARD_APP.permissions as Permissions) } };
  for (const path of opts.modulePaths) {
    const own = appManifestOf(path);
    if (own) grant = unionGrant(grant, own);
  }
  return { events: grant.events, permissions: grant.permissions as AppGrant["permissions"] };
}
