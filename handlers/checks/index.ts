// Handler `checks`: the `steward/config` check run on pull requests that change Steward's
// policy files. It reads the changed files at the head commit (never trusting or running
// anything in them), validates them exactly as the service loads them, and reports.
// A pull request that touches no policy file costs no API write.
import {
  defineHandler,
  operatorReportOnly,
  reportReason,
  type HandlerContext,
  type HandlerModule,
  type Outcome,
} from "../../src/index.js";
import { POLICY_FILE } from "../../src/policy/index.js";
import { evaluate, type FileVersions } from "./decide.js";
import { addSectionReviews, groupTargets, orgWithheld, policyChanges, readHead, readText } from "./facts.js";
import { changedGithubFiles } from "../shared/pull-files.js";
import { checksSection, type ChecksPolicy } from "./policy.js";
import { renderCheck, reportOnlyCheck } from "./render.js";
import { targetsOf, type PullTarget } from "./targets.js";
import { impactSection } from "./impact.js";
import { recordedPull, reportCheck } from "./execute.js";

const CHECKS_EVENTS = [
  "pull_request.opened",
  "pull_request.synchronize",
  "pull_request.reopened",
  "check_suite.requested",
  "check_suite.rerequested",
  "check_run.rerequested",
  "merge_group.checks_requested",
] as const;
type ChecksContext = HandlerContext<(typeof CHECKS_EVENTS)[number], ChecksPolicy>;

export interface ChecksHandlerOptions {
  /**
   * Every handler module whose sections and documents are validated. The built-in check
   * (`handlers/index.ts`) passes the built-in modules plus STEWARD_HANDLERS': the list holds
   * this handler, so it is handed in rather than imported.
   */
  handlers: (ctx: ChecksContext) => Promise<readonly HandlerModule<any>[]>;
}

export function createChecksHandler(
  opts: ChecksHandlerOptions,
): HandlerModule<ChecksPolicy, (typeof CHECKS_EVENTS)[number]> {
  const handlersOf = opts.handlers;
  return defineHandler({
    name: "checks",
    events: CHECKS_EVENTS,
    policy: checksSection,

    async handle(ctx): Promise<Outcome> {
      if (ctx.policy && ctx.policy.config === false) return { status: "skipped", reason: "checks.config is false" };
      let decision =
        ctx.name === "merge_group"
          ? await groupTargets(ctx.octokit, ctx.payload as never)
          : targetsOf(ctx.name, ctx.payload as never, ctx.config.appId || undefined);
      if (decision.kind === "lookup") {
        const target = await recordedPull(ctx.store, decision.owner, decision.repo, decision.headSha);
        decision = target
          ? { kind: "pulls", targets: [target] }
          : { kind: "skip", reason: `no pull request recorded for ${decision.headSha}` };
      }
      if (decision.kind === "skip") return { status: "skipped", reason: decision.reason };
      const summaries: string[] = [];
      for (const target of decision.targets) summaries.push(await checkPull(ctx, target, await handlersOf(ctx)));
      return { status: "done", summary: summaries.join("; ") };
    },
  });
}

async function checkPull(
  ctx: ChecksContext,
  target: PullTarget,
  handlers: readonly HandlerModule<any>[],
): Promise<string> {
  const { owner, repo } = target;
  const adminRepo = ctx.config.adminRepo || ".github";
  const listed = await changedGithubFiles(ctx.octokit, {
    owner,
    repo,
    number: target.number,
    headSha: target.headSha,
    ...(target.baseSha ? { baseSha: target.baseSha } : {}),
  });
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
  const org = orgSource
    ? { file: `${orgSource}:${POLICY_FILE}`, text: await readText(ctx.octokit, owner, adminRepo, POLICY_FILE) }
    : undefined;

  // A fork's files are untrusted: validated for structure only, nothing on this host looked up.
  const evaluation = evaluate({ files, ...(org ? { org } : {}), handlers, resolveSources: !target.fork });
  await addSectionReviews(ctx.octokit, target, evaluation, org?.text, handlers);
  // The verdict is always the merged one; what is shown of the org file depends on who reads this check.
  const withheld = org?.text !== undefined ? await orgWithheld(ctx.octokit, target, adminRepo) : undefined;
  const shown = withheld ? evaluate({ files, handlers, resolveSources: !target.fork }) : evaluation;
  // Report mode changes what the verdict does (a failure blocks no merge), never the verdict.
  const report = reportReason(
    operatorReportOnly(ctx.config, "checks"),
    ctx.policy?.mode === "report" && "checks.mode: report",
  );
  const verdict = renderCheck(evaluation, {
    baseRef: target.baseRef,
    orgSource: org?.text !== undefined ? orgSource : undefined,
    fork: target.fork,
    ...(withheld ? { withheld: { reason: withheld, shown } } : {}),
  });
  const rendered = report ? reportOnlyCheck(verdict, report) : verdict;
  // A fork's policy is only validated: it is not run against this host's records.
  const impact = target.fork
    ? undefined
    : await impactSection(ctx.store, `${owner}/${repo}`, evaluation.files, handlers);
  return reportCheck(ctx, target, evaluation, rendered, impact);
}
