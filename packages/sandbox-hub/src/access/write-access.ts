// Whether a caller has push access to a repository's contents: what decides, as on GitHub,
// whether draft releases are visible (an installation needs `contents: write`; a user must reach
// be the owner or a member of the owning organisation).
import type { HubRequest, Repo } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";

export function canWriteContents(hub: SandboxHub, req: HubRequest, repo: Repo): boolean {
  if (req.auth.kind === "user")
    return req.auth.login === repo.owner || hub.accounts.isMember(repo.owner, req.auth.login);
  if (req.auth.kind !== "installation") return false;
  const token = hub.tokens.lookup(req.auth.token);
  return token?.kind === "installation" && token.permissions.contents === "write";
}

/** The login that acts for a request: the user, or the app's bot for an installation. */
export function actingLogin(hub: SandboxHub, req: HubRequest): string {
  return req.auth.kind === "user" ? req.auth.login : hub.botLogin();
}
