// Acting on the steward/config verdict: remember which pull request the head commit belongs to
// (a check suite or re-run request on it names none) and report the check run.
import type { HandlerContext, Store } from "../../src/index.js";
import type { Evaluation } from "./decide.js";
import type { RenderedCheck } from "./render.js";
import { CHECK_NAME, type PullTarget } from "./targets.js";
import { pullKey, PULL_KEY_TTL_MS } from "./keys.js";

/** The pull request recorded for a head commit, when one was checked before. */
export async function recordedPull(
  store: Store,
  owner: string,
  repo: string,
  headSha: string,
): Promise<PullTarget | undefined> {
  return store.get<PullTarget>(pullKey(owner, repo, headSha));
}

/** Report the rendered check on the pull request's head commit; `impact` is appended to its summary. */
export async function reportCheck(
  ctx: Pick<HandlerContext, "store" | "checks" | "log" | "deliveryId">,
  target: PullTarget,
  evaluation: Evaluation,
  rendered: RenderedCheck,
  impact: string | undefined,
): Promise<string> {
  const { owner, repo } = target;
  await ctx.store.set(pullKey(owner, repo, target.headSha), target, { ttlMs: PULL_KEY_TTL_MS });
  await ctx.checks.report({
    owner,
    repo,
    headSha: target.headSha,
    name: CHECK_NAME,
    conclusion: rendered.conclusion,
    title: rendered.title,
    summary: rendered.summary + (impact ?? ""),
    annotations: rendered.annotations,
    externalId: ctx.deliveryId,
  });
  ctx.log.info(
    {
      pull: target.number,
      files: evaluation.files.map((f) => f.path),
      errors: evaluation.errors,
      warnings: evaluation.warnings,
      ...(rendered.reportOnly ? { reportOnly: rendered.reportOnly.by, would: rendered.reportOnly.would } : {}),
    },
    "steward/config reported",
  );
  if (rendered.reportOnly?.would === "failure")
    return `#${target.number}: would have concluded failure, concluded neutral (report only, by ${rendered.reportOnly.by}): ${rendered.title}`;
  return `#${target.number}: ${rendered.conclusion} (${rendered.title})`;
}
