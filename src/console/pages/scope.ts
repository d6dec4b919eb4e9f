// Who may see and who may act on a delivery, decided by the delivery's own installation AND
// repository against what the signed-in person was granted in that installation, never by
// what they hold elsewhere (owning one organisation says nothing about another one).
//   read: the repository is one the person can access in the delivery's installation; a
//         delivery without a repository (installation events, which list repositories the
//         person may not see) only an owner of that installation's account.
//   act (replay): additionally the person owns the installation's account.
import type { InstallationGrant } from "../github.js";
import type { PageContext } from "../types.js";

type Who = Pick<PageContext, "access">;
interface Subject {
  repository?: string | undefined;
  installationId?: number | undefined;
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The installation grant a delivery belongs to, or undefined when the person has none for it. */
function grantOf(ctx: Who, d: Subject): InstallationGrant | undefined {
  if (d.installationId !== undefined) return ctx.access.grants.find((g) => g.id === d.installationId);
  // No installation recorded: the repository names it (a repository is in one installation of an app).
  if (d.repository === undefined) return undefined;
  return ctx.access.grants.find((g) => g.repositories.some((r) => same(r, d.repository!)));
}

function reads(grant: InstallationGrant, repository: string | undefined): boolean {
  return repository === undefined ? grant.owner : grant.repositories.some((r) => same(r, repository));
}

export function maySee(ctx: Who, d: Subject): boolean {
  const grant = grantOf(ctx, d);
  return grant !== undefined && reads(grant, d.repository);
}

/** Replay (and any other action on a delivery): an owner of the delivery's installation's account who can see it. */
export function mayAct(ctx: Who, d: Subject): boolean {
  const grant = grantOf(ctx, d);
  return grant !== undefined && grant.owner && reads(grant, d.repository);
}

/** Repositories of installations whose account the person owns: where dead letters are theirs to replay. */
export function ownedScope(ctx: Who): string[] {
  return ctx.access.grants.filter((g) => g.owner).flatMap((g) => g.repositories);
}

/** Whether the person owns any installation's account (owner pages are shown, scoped to what they own). */
export function ownsAny(ctx: Who): boolean {
  return ctx.access.grants.some((g) => g.owner);
}
