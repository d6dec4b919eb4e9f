// Deleting git references (`DELETE /repos/{owner}/{repo}/git/refs/{ref}`): what apps that clean up
// merged branches call. A pushed branch or tag disappears; a reference that does not exist is
// GitHub's 422 `Reference does not exist`.
import type { RouteTable } from "../core/router.js";
import { HubError } from "../core/types.js";
import { actorOf } from "../core/shared.js";
import type { SandboxHub } from "../sandbox-hub.js";

const WRITE = { auth: "installation-or-user" as const, permission: { contents: "write" as const } };

export function installRefRoutes(hub: SandboxHub, router: RouteTable): void {
  router.add(
    "DELETE",
    "/repos/{owner}/{repo}/git/refs/{ref+}",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const ref = req.params.ref!.replace(/^refs\//, "");
      const git = hub.git(repo);
      const kind = ref.startsWith("heads/") ? git.branches : ref.startsWith("tags/") ? git.tags : undefined;
      const name = ref.replace(/^(heads|tags)\//, "");
      if (!kind?.has(name)) throw new HubError(422, "Reference does not exist");
      kind.delete(name);
      hub.effect("git.ref_deleted", { by: actorOf(req.auth), repo: `${repo.owner}/${repo.name}`, ref: `refs/${ref}` });
      return { status: 204 };
    },
    WRITE,
  );
}
