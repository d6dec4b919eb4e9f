// Who may see a delivery: its repository is one the viewer can access; one without a
// repository (an installation event) only an owner of an installation that received it.
import type { PageContext } from "../types.js";

export function maySee(ctx: Pick<PageContext, "access" | "viewer">, d: { repository?: string | undefined; installationId?: number | undefined }): boolean {
  if (d.repository !== undefined) return ctx.access.repositories.includes(d.repository);
  return ctx.viewer.owner && d.installationId !== undefined && ctx.access.installations.includes(d.installationId);
}

/** An organisation's owner may act on deliveries of that organisation's repositories. */
export function ownsRepository(ctx: Pick<PageContext, "access">, repository: string | undefined): boolean {
  const org = repository?.split("/")[0]?.toLowerCase();
  return org !== undefined && ctx.access.ownerOf.includes(org);
}
