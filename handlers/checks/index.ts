// Handler `checks`: the `steward/config` check run on pull requests that change Steward's
// policy files. It reads the changed files at the head commit (never trusting or running
// anything in them), validates them exactly as the service loads them, and reports.
// A pull request that touches no policy file costs no API write.
import { defineHandler, type HandlerContext, type HandlerModule, type InstallationOctokit, type Outcome } from "../../src/index.js";
import { POLICY_FILE } from "../../src/policy/index.js";
import { evaluate, type FileVersions } from "./evaluate.js";
import { policyChanges } from "./files.js";
import { changedGithubFiles } from "../shared/pull-files.js";
import { checksSection, type ChecksPolicy } from "./policy.js";
import { renderCheck } from "./render.js";
import { CHECK_NAME, targetsOf, type PullTarget } from "./targets.js";
import { groupTargets } from "./merge-group.js";
import { impactSection } from "./impact.js";
import { addGateFindings } from "./org-gates.js";
import { repoVisibility, withheldBecause } from "../shared/visibility.js";

const PULL_KEY_TTL_MS = 30 * 24 * 3_600_000;
const pullKey = (owner: string, repo: string, sha: string) => `checks:pull:${owner.toLowerCase()}/${repo.toLowerCase()}@${sha}`;

const CHECKS_EVENTS = ["pull_request.opened", "pull_request.synchronize", "pull_request.reopened", "check_suite.requested", "check_suite.rerequested", "check_run.rerequested", "merge_group.checks_requested"] as const;
type ChecksContext = HandlerContext<(typeof CHECKS_EVENTS)[number], ChecksPolicy>;

export interface ChecksHandlerOptions {
  /**
   * Every handler module whose sections and documents are validated. The built-in check
   * (`handlers/index.ts`) passes the built-in modules plus STEWARD_HANDLERS': the list holds
   * this handler, so it is handed in rather than imported.
   */
  handlers: (ctx: ChecksContext) => Promise<readonly HandlerModule<any>[]>;
}

export function createChecksHandler(opts: ChecksHandlerOptions): HandlerModule<ChecksPolicy, (typeof CHECKS_EVENTS)[number]> {
  const handlersOf = opts.handlers;
  return defineHandler({
    name: "checks",
    events: CHECKS_EVENTS,
    policy: checksSection,

    async handle(ctx): Promise<Outcome> {
      if (ctx.policy && ctx.policy.config === false) return { status: "skipped", reason: "checks.config is false" };
      let decision = ctx.name === "merge_group" ? await groupTargets(ctx.octokit, ctx.payload as never) : targetsOf(ctx.name, ctx.payload as never, ctx.config.appId || undefined);
      if (decision.kind === "lookup") {
        const target = await ctx.store.get<PullTarget>(pullKey(decision.owner, decision.repo, decision.headSha));
        decision = target ? { kind: "pulls", targets: [target] } : { kind: "skip", reason: `no pull request recorded for ${decision.headSha}` };
      }
      if (decision.kind === "skip") return { status: "skipped", reason: decision.reason };
      const summaries: string[] = [];
      for (const target of decision.targets) summaries.push(await checkPull(ctx, target, await handlersOf(ctx)));
      return { status: "done", summary: summaries.join("; ") };
    },
  });
}

async function checkPull(ctx: ChecksContext, target: PullTarget, handlers: readonly HandlerModule<any>[]): Promise<string> {
  const { owner, repo } = target;
  const adminRepo = ctx.config.adminRepo || ".github";
  const listed = await changedGithubFiles(ctx.octokit, { owner, repo, number: target.number, headSha: target.headSha, ...(target.baseSha ? { baseSha: target.baseSha } : {}) });
  const changes = policyChanges(listed, repo, adminRepo);
  if (changes.length === 0) return `#${target.number}: no policy file changed`;

  // Both commits are read from the base repository: a fork's head commit is there too
  // (refs/pull/N/head), and nothing of the fork's is needed beyond these texts.
  const base = target.baseSha ?? target.baseRef;
  const files: FileVersions[] = await Promise.all(
    changes.map(async (c) => ({
      ...c,
      head: c.change === "removed" ? undefined : await readHead(ctx.octokit, target, c.path),
      base: c.change === "added" ? undefined : await readText(ctx.octokit, owner, repo, c.path, base),
    })),
  );
  const isAdmin = repo.toLowerCase() === adminRepo.toLowerCase();
  const orgSource = isAdmin ? undefined : `${owner}/${adminRepo}`;
  const org = orgSource ? { file: `${orgSource}:${POLICY_FILE}`, text: await readText(ctx.octokit, owner, adminRepo, POLICY_FILE) } : undefined;

  // A fork's files are untrusted: validated for structure only, nothing on this host looked up.
  const evaluation = evaluate({ files, ...(org ? { org } : {}), handlers, resolveSources: !target.fork });
  await addGateFindings(ctx.octokit, target, evaluation, org?.text, handlers);
  // The verdict is always the merged one; what is shown of the org file depends on who reads this check.
  const withheld = org?.text !== undefined ? await orgWithheld(ctx.octokit, target, adminRepo) : undefined;
  const shown = withheld ? evaluate({ files, handlers, resolveSources: !target.fork }) : evaluation;
  const rendered = renderCheck(evaluation, {
    baseRef: target.baseRef,
    orgSource: org?.text !== undefined ? orgSource : undefined,
    fork: target.fork,
    ...(withheld ? { withheld: { reason: withheld, shown } } : {}),
  });
  await ctx.store.set(pullKey(owner, repo, target.headSha), target, { ttlMs: PULL_KEY_TTL_MS });
  await ctx.checks.report({
    owner,
    repo,
    headSha: target.headSha,
    name: CHECK_NAME,
    conclusion: rendered.conclusion,
    title: rendered.title,
    // A fork's policy is only validated: it is not run against this host's records.
    summary: rendered.summary + ((target.fork ? undefined : await impactSection(ctx.store, `${owner}/${repo}`, evaluation.files)) ?? ""),
    annotations: rendered.annotations,
    externalId: ctx.deliveryId,
  });
  ctx.log.info({ pull: target.number, files: changes.map((c) => c.path), errors: evaluation.errors, warnings: evaluation.warnings }, "steward/config reported");
  return `#${target.number}: ${rendered.conclusion} (${rendered.title})`;
}

/** Why the admin repository's policy must not appear in this pull request's check, if it must not. */
async function orgWithheld(octokit: InstallationOctokit, target: PullTarget, adminRepo: string): Promise<string | undefined> {
  const admin = await repoVisibility(octokit, target.owner, adminRepo);
  const here = await repoVisibility(octokit, target.owner, target.repo);
  return withheldBecause(admin, here, target.fork);
}

/**
 * A changed file at the head commit. The pull request says it exists there, so not finding it
 * must not pass as "no file": try the fork itself, then give up loudly (the delivery is retried).
 */
async function readHead(octokit: InstallationOctokit, target: PullTarget, path: string): Promise<string> {
  const text = await readText(octokit, target.owner, target.repo, path, target.headSha);
  if (text !== undefined) return text;
  const [headOwner, headName] = (target.headRepo ?? "").split("/");
  if (target.fork && headOwner && headName) {
    const fromFork = await readText(octokit, headOwner, headName, path, target.headSha);
    if (fromFork !== undefined) return fromFork;
  }
  throw new Error(`${path} is changed by pull request #${target.number} but cannot be read at ${target.headSha}`);
}

/** A file's text at a ref, or undefined when it does not exist there. */
async function readText(octokit: InstallationOctokit, owner: string, repo: string, path: string, ref?: string): Promise<string | undefined> {
  try {
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", { owner, repo, path, ...(ref ? { ref } : {}) });
    const d = data as { type?: string; encoding?: string; content?: string };
    if (Array.isArray(data) || d.type !== "file") return "";
    if (d.encoding !== "base64" || typeof d.content !== "string") return "";
    return Buffer.from(d.content, "base64").toString("utf8");
  } catch (e) {
    if ((e as { status?: number }).status === 404) return undefined;
    throw e;
  }
}
