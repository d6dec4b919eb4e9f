// One plan row carried out against the API: create/update (sealed for secrets), the org
// repository list on its own, delete, and the read-back of `updated_at` after a secret write.
import { describeError, statusOf, type ApiResponse, type Requester } from "./api.js";
import { actualOf, collectionPath, type ListedItem } from "./facts.js";
import type { PlanRow } from "./plan.js";
import type { PublicKeyCache } from "./seal.js";
import { seal } from "./seal.js";
import type { ActualTarget, DesiredTarget, Scope } from "./targets.js";

/**
 * A create-first variable (PlanRow.createFirst) that exists already: what is there, read, for the
 * sync to judge. Never overwritten blindly: it may be someone else's.
 */
export class ExistsAlready extends Error {
  constructor(readonly actual: ActualTarget) {
    super("exists already");
  }
}

export interface WriteContext {
  api: Requester;
  org: string;
  keys: PublicKeyCache;
}

function itemRoute(org: string, kind: "secret" | "variable", scope: Scope, name: string) {
  const { route, params } = collectionPath(org, kind, scope);
  const param = kind === "secret" ? "secret_name" : "name";
  return { route: `${route}/{${param}}`, params: { ...params, [param]: name } };
}

function orgShare(d: DesiredTarget): Record<string, unknown> {
  return d.visibility === "selected"
    ? { visibility: "selected", selected_repository_ids: d.selectedRepositoryIds ?? [] }
    : { visibility: d.visibility };
}

/** The API's `Date` header as ISO, when it sent one. */
function serverDate(res: ApiResponse): string | undefined {
  const t = res.headers.date === undefined ? NaN : Date.parse(String(res.headers.date));
  return Number.isFinite(t) ? new Date(t).toISOString() : undefined;
}

async function putSecret(ctx: WriteContext, d: DesiredTarget, value: string): Promise<string | undefined> {
  const { route, params } = itemRoute(ctx.org, "secret", d.scope, d.name);
  // A refused key id means the scope's key was rotated: fetch the new key once and retry.
  for (let attempt = 1; ; attempt++) {
    const key = await ctx.keys.get(ctx.api, ctx.org, d.scope);
    const body = {
      encrypted_value: await seal(value, key.key),
      key_id: key.key_id,
      ...(d.scope.level === "org" ? orgShare(d) : {}),
    };
    try {
      return serverDate(await ctx.api.request(`PUT ${route}`, { ...params, ...body }));
    } catch (e) {
      const status = statusOf(e);
      if (attempt === 1 && (status === 422 || status === 400)) {
        ctx.keys.invalidate(ctx.org, d.scope);
        continue;
      }
      throw e;
    }
  }
}

/** One variable as it is now, or undefined when there is none. */
async function readVariable(ctx: WriteContext, d: DesiredTarget): Promise<ActualTarget | undefined> {
  const { route, params } = itemRoute(ctx.org, "variable", d.scope, d.name);
  try {
    const res = await ctx.api.request(`GET ${route}`, params);
    const item = (res.data ?? {}) as Partial<ListedItem>;
    return actualOf("variable", d.scope, { ...item, name: d.name, updated_at: String(item.updated_at ?? "") });
  } catch (e) {
    if (statusOf(e) === 404) return undefined;
    throw e;
  }
}

const alreadyExists = (e: unknown) =>
  statusOf(e) === 409 || (statusOf(e) === 422 && /already exists/i.test(describeError(e)));

async function writeVariable(ctx: WriteContext, d: DesiredTarget, create: boolean, createFirst = false): Promise<void> {
  const { route, params } = collectionPath(ctx.org, "variable", d.scope);
  const item = itemRoute(ctx.org, "variable", d.scope, d.name);
  const body = { name: d.name, value: d.value ?? "", ...(d.scope.level === "org" ? orgShare(d) : {}) };
  const post = () => ctx.api.request(`POST ${route}`, { ...params, ...body });
  const patch = () => ctx.api.request(`PATCH ${item.route}`, { ...item.params, ...body });
  // The plan may be a moment old: someone may have created or deleted it since.
  try {
    await (create ? post() : patch());
  } catch (e) {
    // Someone created it meanwhile (409, or a 422 saying so); a 422 about the value itself (over
    // GitHub's 48 KB) must surface as it is, not as the PATCH's 404.
    if (create && alreadyExists(e) && createFirst) {
      const actual = await readVariable(ctx, d);
      // Deleted again between the two requests: missing after all.
      if (!actual) return writeVariable(ctx, d, true);
      throw new ExistsAlready(actual);
    }
    if (create && alreadyExists(e)) await patch();
    else if (!create && statusOf(e) === 404) await post();
    else throw e;
  }
}

/**
 * Change which repositories an org target is shared with, one repository at a time: replacing the
 * whole list would undo a repository someone added between Steward's read and its write.
 */
async function setSelectedRepositories(
  ctx: WriteContext,
  d: DesiredTarget,
  delta: PlanRow["repositoryChanges"],
): Promise<string | undefined> {
  const path =
    d.kind === "secret"
      ? "/orgs/{org}/actions/secrets/{name}/repositories"
      : "/orgs/{org}/actions/variables/{name}/repositories";
  if (!delta)
    return serverDate(
      await ctx.api.request(`PUT ${path}`, {
        org: ctx.org,
        name: d.name,
        selected_repository_ids: d.selectedRepositoryIds ?? [],
      }),
    );
  let last: string | undefined;
  for (const id of delta.add)
    last = serverDate(
      await ctx.api.request(`PUT ${path}/{repository_id}`, { org: ctx.org, name: d.name, repository_id: id }),
    );
  for (const id of delta.remove) {
    try {
      last = serverDate(
        await ctx.api.request(`DELETE ${path}/{repository_id}`, { org: ctx.org, name: d.name, repository_id: id }),
      );
    } catch (e) {
      if (statusOf(e) !== 404) throw e; // the repository is gone: no longer shared, as wanted
    }
  }
  return last;
}

/** Remote `updated_at` after a write: the baseline drift is judged against. */
export async function readUpdatedAt(
  ctx: WriteContext,
  d: Pick<DesiredTarget, "kind" | "scope" | "name">,
): Promise<string> {
  const { route, params } = itemRoute(ctx.org, d.kind, d.scope, d.name);
  const res = await ctx.api.request(`GET ${route}`, params);
  return String(res.data?.updated_at ?? "");
}

/**
 * Carry out one create/update row; `value` is the resolved value (secrets and variables).
 * Returns the server's time of a secret write, when known (see TargetRecord.serverWrittenAt).
 */
export async function writeRow(ctx: WriteContext, row: PlanRow, value: string): Promise<string | undefined> {
  const d = row.desired!;
  const onlyRepositories = row.action === "update" && row.changes.length === 1 && row.changes[0] === "repositories";
  if (onlyRepositories) return setSelectedRepositories(ctx, d, row.repositoryChanges);
  if (d.kind === "secret") return putSecret(ctx, d, value);
  await writeVariable(ctx, d, row.action === "create", row.createFirst === true);
  return undefined;
}

export async function deleteRow(ctx: WriteContext, row: PlanRow): Promise<void> {
  const { route, params } = itemRoute(ctx.org, row.kind, row.scope, row.name);
  try {
    await ctx.api.request(`DELETE ${route}`, params);
  } catch (e) {
    if (statusOf(e) !== 404) throw e; // already gone is what we wanted
  }
}
