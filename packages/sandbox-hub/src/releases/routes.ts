// Releases: list, get (by id, tag, latest), create, update, delete, drafts included. Drafts are
// seen only by callers with push access (GitHub's rule); `release` webhooks follow each change
// (`created` also for a draft, `published` when a release leaves draft, `edited`, `deleted`).
import { notFound, validationFailed } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import type { HubRequest, Repo } from "../core/types.js";
import { actorOf } from "../core/shared.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { actingLogin, canWriteContents } from "../access/write-access.js";
import { releaseJson, type Release } from "./json.js";
import { optionalBoolean as bool, optionalString as str } from "../body/fields.js";

const optionalString = (body: Record<string, unknown> | undefined, field: string) => str(body, "Release", field);
const optionalBoolean = (body: Record<string, unknown> | undefined, field: string) => bool(body, "Release", field);

const READ = { auth: "installation-or-user" as const, permission: { contents: "read" as const } };
const WRITE = { auth: "installation-or-user" as const, permission: { contents: "write" as const } };

const releasesByHub = new WeakMap<SandboxHub, Release[]>();

/** Releases of a repository, newest first (the API's order), for tests. */
export function releasesOf(hub: SandboxHub, repoId: number): Release[] {
  return (releasesByHub.get(hub) ?? []).filter((r) => r.repoId === repoId).reverse();
}

export function installReleaseRoutes(hub: SandboxHub, router: RouteTable): void {
  const all: Release[] = [];
  releasesByHub.set(hub, all);

  const visible = (req: HubRequest, repo: Repo) => {
    const drafts = canWriteContents(hub, req, repo);
    return all.filter((r) => r.repoId === repo.id && (drafts || !r.draft)).reverse();
  };
  const find = (req: HubRequest, repo: Repo) => {
    const id = Number(req.params.release_id);
    const r = visible(req, repo).find((x) => x.id === id);
    if (!r) throw notFound();
    return r;
  };
  const notify = (req: HubRequest, repo: Repo, r: Release, action: string, extra: Record<string, unknown> = {}) => {
    void hub.deliver("release", {
      action,
      release: releaseJson(hub, repo, r),
      repository: hub.repoJson(repo),
      sender: hub.userJson(actingLogin(hub, req)),
      ...extra,
    });
  };
  const tagTaken = (repo: Repo, tag: string, except?: number) =>
    all.some((r) => r.repoId === repo.id && r.id !== except && !r.draft && r.tag_name === tag);

  router.add(
    "GET",
    "/repos/{owner}/{repo}/releases",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      return hub.paginate(
        req,
        visible(req, repo).map((r) => releaseJson(hub, repo, r)),
      );
    },
    READ,
  );

  router.add(
    "GET",
    "/repos/{owner}/{repo}/releases/latest",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      // The most recent published full release (drafts and pre-releases never are "latest").
      const latest = all
        .filter((r) => r.repoId === repo.id && !r.draft && !r.prerelease)
        .sort((a, b) => (a.published_at! < b.published_at! ? 1 : -1))[0];
      if (!latest) throw notFound();
      return { status: 200, body: releaseJson(hub, repo, latest) };
    },
    READ,
  );

  router.add(
    "GET",
    "/repos/{owner}/{repo}/releases/tags/{tag+}",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const r = all.find((x) => x.repoId === repo.id && !x.draft && x.tag_name === req.params.tag);
      if (!r) throw notFound();
      return { status: 200, body: releaseJson(hub, repo, r) };
    },
    READ,
  );

  router.add(
    "GET",
    "/repos/{owner}/{repo}/releases/{release_id}",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      return { status: 200, body: releaseJson(hub, repo, find(req, repo)) };
    },
    READ,
  );

  router.add(
    "POST",
    "/repos/{owner}/{repo}/releases",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const body = req.body;
      const tag = optionalString(body, "tag_name");
      if (tag === undefined || tag === "") throw validationFailed("Release", "tag_name", "missing_field");
      const draft = optionalBoolean(body, "draft") ?? false;
      if (!draft && tagTaken(repo, tag)) throw validationFailed("Release", "tag_name", "already_exists");
      const target = optionalString(body, "target_commitish") ?? repo.default_branch;
      if (!hub.resolveRef(repo, target)) throw validationFailed("Release", "target_commitish", "invalid");
      const now = hub.timestamp();
      const r: Release = {
        id: hub.nextId(),
        repoId: repo.id,
        tag_name: tag,
        target_commitish: target,
        name: optionalString(body, "name") ?? null,
        body: optionalString(body, "body") ?? null,
        draft,
        prerelease: optionalBoolean(body, "prerelease") ?? false,
        author: actingLogin(hub, req),
        created_at: now,
        published_at: draft ? null : now,
      };
      all.push(r);
      hub.effect("releases.created", {
        by: actorOf(req.auth),
        repo: `${repo.owner}/${repo.name}`,
        id: r.id,
        tag: r.tag_name,
        draft: r.draft,
      });
      notify(req, repo, r, "created");
      if (!r.draft) notify(req, repo, r, "published");
      return {
        status: 201,
        body: releaseJson(hub, repo, r),
        headers: { Location: `${hub.baseUrl}/repos/${repo.owner}/${repo.name}/releases/${r.id}` },
      };
    },
    WRITE,
  );

  router.add(
    "PATCH",
    "/repos/{owner}/{repo}/releases/{release_id}",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const r = find(req, repo);
      const body = req.body;
      const tag = optionalString(body, "tag_name");
      const draft = optionalBoolean(body, "draft");
      const nextTag = tag ?? r.tag_name;
      const nextDraft = draft ?? r.draft;
      if (!nextDraft && tagTaken(repo, nextTag, r.id)) throw validationFailed("Release", "tag_name", "already_exists");
      const target = optionalString(body, "target_commitish");
      if (target !== undefined && !hub.resolveRef(repo, target))
        throw validationFailed("Release", "target_commitish", "invalid");
      const before = { name: r.name, body: r.body, tag_name: r.tag_name };
      r.tag_name = nextTag;
      if (target !== undefined) r.target_commitish = target;
      const name = optionalString(body, "name");
      if (name !== undefined) r.name = name;
      const text = optionalString(body, "body");
      if (text !== undefined) r.body = text;
      const prerelease = optionalBoolean(body, "prerelease");
      if (prerelease !== undefined) r.prerelease = prerelease;
      const published = r.draft && !nextDraft;
      r.draft = nextDraft;
      if (published) r.published_at = hub.timestamp();
      hub.effect("releases.updated", {
        by: actorOf(req.auth),
        repo: `${repo.owner}/${repo.name}`,
        id: r.id,
        tag: r.tag_name,
        draft: r.draft,
      });
      const changes: Record<string, { from: unknown }> = {};
      for (const [k, v] of Object.entries(before)) if (r[k as keyof typeof before] !== v) changes[k] = { from: v };
      notify(req, repo, r, "edited", { changes });
      if (published) notify(req, repo, r, "published");
      return { status: 200, body: releaseJson(hub, repo, r) };
    },
    WRITE,
  );

  router.add(
    "DELETE",
    "/repos/{owner}/{repo}/releases/{release_id}",
    (req) => {
      const repo = hub.requireRepo(req, req.params.owner!, req.params.repo!);
      const r = find(req, repo);
      all.splice(all.indexOf(r), 1);
      hub.effect("releases.deleted", { by: actorOf(req.auth), repo: `${repo.owner}/${repo.name}`, id: r.id });
      notify(req, repo, r, "deleted");
      return { status: 204 };
    },
    WRITE,
  );
}
