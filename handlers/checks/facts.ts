// What the steward/config check reads: which of a pull request's changed files are policy files
// and how they changed, their texts at the head and the base, the organisation file, the pull
// request a merge group names, whether the organisation file may be shown here, and what each
// handler's section says about a repository file under the organisation's (e.g. a rule that
// tries to loosen an organisation gate).
import type { HandlerModule, InstallationOctokit, Problem } from "../../src/index.js";
import { analysePolicyText, isPolicyPath } from "../../src/policy/index.js";
import { groupPull, mergeGroupOf } from "../shared/merge-group.js";
import { forkOf } from "../shared/fork.js";
import { repoVisibility, withheldBecause } from "../shared/visibility.js";
import type { ChangedFile } from "../shared/pull-files.js";
import type { Evaluation, PolicyChange } from "./decide.js";
import type { PullTarget, TargetDecision } from "./targets.js";

export type { ChangedFile } from "../shared/pull-files.js";
export type { PolicyChange } from "./decide.js";

/** The policy files a pull request touches, each once, in path order. */
export function policyChanges(files: readonly ChangedFile[], repo: string, adminRepo: string): PolicyChange[] {
  const out = new Map<string, PolicyChange>();
  const isPolicy = (p: string | undefined) => p !== undefined && isPolicyPath(p, repo, adminRepo);
  for (const f of files) {
    if (isPolicy(f.filename)) {
      // A file renamed or copied onto a policy path is new there.
      const change =
        f.status === "removed" ? "removed" : ["added", "renamed", "copied"].includes(f.status) ? "added" : "modified";
      out.set(f.filename, { path: f.filename, change });
    }
    if (f.status === "renamed" && isPolicy(f.previous_filename) && !out.has(f.previous_filename!)) {
      out.set(f.previous_filename!, { path: f.previous_filename!, change: "removed" });
    }
  }
  return [...out.values()].sort((a, b) => a.path.localeCompare(b.path));
}

/** `steward/config` on a merge group's head commit: the pull request the group names is checked again. */
export async function groupTargets(
  octokit: InstallationOctokit,
  payload: Parameters<typeof mergeGroupOf>[0] & { repository?: { id?: number; full_name?: string } },
): Promise<TargetDecision> {
  const group = mergeGroupOf(payload);
  if ("skip" in group) return { kind: "skip", reason: group.skip };
  const pull = await groupPull(octokit, group);
  const fork = forkOf(pull.head.repo, payload.repository as never);
  const target: PullTarget = {
    owner: group.owner,
    repo: group.repo,
    number: group.number,
    headSha: group.headSha,
    baseSha: group.baseSha,
    baseRef: group.baseRef,
    fork: fork !== null,
    ...(pull.head.repo?.full_name ? { headRepo: pull.head.repo.full_name } : {}),
  };
  return { kind: "pulls", targets: [target] };
}

/** Why the admin repository's policy must not appear in this pull request's check, if it must not. */
export async function orgWithheld(
  octokit: InstallationOctokit,
  target: PullTarget,
  adminRepo: string,
): Promise<string | undefined> {
  const admin = await repoVisibility(octokit, target.owner, adminRepo);
  const here = await repoVisibility(octokit, target.owner, target.repo);
  return withheldBecause(admin, here, target.fork);
}

/**
 * A changed file at the head commit. The pull request says it exists there, so not finding it
 * must not pass as "no file": try the fork itself, then give up loudly (the delivery is retried).
 */
export async function readHead(octokit: InstallationOctokit, target: PullTarget, path: string): Promise<string> {
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
export async function readText(
  octokit: InstallationOctokit,
  owner: string,
  repo: string,
  path: string,
  ref?: string,
): Promise<string | undefined> {
  try {
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      owner,
      repo,
      path,
      ...(ref ? { ref } : {}),
    });
    const d = data as { type?: string; encoding?: string; content?: string };
    if (Array.isArray(data) || d.type !== "file") return "";
    if (d.encoding !== "base64" || typeof d.content !== "string") return "";
    return Buffer.from(d.content, "base64").toString("utf8");
  } catch (e) {
    if ((e as { status?: number }).status === 404) return undefined;
    throw e;
  }
}

/**
 * What each section says about the changed repository policy files under the organisation file
 * (`PolicySection.review`), added to each file as warnings at the key (the organisation's rule
 * applies all the same). Only sections the organisation file sets are asked.
 */
export async function addSectionReviews(
  octokit: InstallationOctokit,
  target: { owner: string; repo: string },
  evaluation: Evaluation,
  orgText: string | undefined,
  handlers: readonly HandlerModule<any>[],
): Promise<void> {
  if (!orgText) return;
  const reviewing = handlers.flatMap((h) => (h.policy?.review ? [h.policy] : []));
  if (reviewing.length === 0) return;
  const orgValue = analysePolicyText(orgText, { file: "org", handlers }).value as Record<string, unknown> | undefined;
  const sections = reviewing.filter((s) => orgValue?.[s.key] !== undefined);
  if (sections.length === 0) return;
  for (const file of evaluation.files) {
    if (file.kind !== "policy" || file.head === undefined) continue;
    const analysis = analysePolicyText(file.head, { file: file.path, handlers, resolveSources: false });
    const own = analysis.value as Record<string, unknown> | undefined;
    for (const section of sections) {
      const findings = await section.review!({
        org: orgValue![section.key],
        own: own?.[section.key],
        octokit,
        repository: target,
      });
      for (const finding of findings) {
        const at = analysis.locate(finding.path);
        const problem: Problem = {
          file: file.path,
          line: at.line,
          column: at.column,
          message: finding.message,
          path: finding.path,
          severity: "warning",
        };
        file.problems.push(problem);
        evaluation.warnings++;
      }
    }
  }
}
