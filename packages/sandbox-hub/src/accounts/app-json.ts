// The app as `GET /app` renders it (and the manifest flow's answer). Apart from json.ts, which
// the hub's state imports: this one reads that state.
import type { Installation } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { clientIdOf } from "./oauth.js";

export function appJson(hub: SandboxHub): Record<string, unknown> {
  const owner = [...hub.accounts.orgs.values()][0];
  return {
    id: hub.appId,
    slug: hub.appSlug,
    node_id: hub.nodeId("A_", hub.appId),
    client_id: clientIdOf(hub.appId),
    owner: owner ? hub.userJson(owner.login) : null,
    name: hub.appName,
    description: "Steward running against the sandbox hub",
    external_url: hub.baseUrl,
    html_url: `${hub.baseUrl}/apps/${hub.appSlug}`,
    created_at: hub.appCreatedAt,
    updated_at: hub.appCreatedAt,
    permissions: unionPermissions([...hub.accounts.installations.values()]),
    events: [...new Set([...hub.accounts.installations.values()].flatMap((i) => i.events))],
    installations_count: hub.accounts.installations.size,
  };
}

/** The app's permissions: each at the highest level any installation grants. */
function unionPermissions(insts: Installation[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of insts) for (const [k, v] of Object.entries(i.permissions)) if (out[k] !== "write") out[k] = v;
  return out;
}
