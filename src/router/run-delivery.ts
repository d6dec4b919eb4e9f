// One run of a claimed delivery: route it, prepare the installation's Octokit and the
// repository's policy once, run every handler that still needs to run (concurrently,
// each isolated), and persist each outcome as soon as it is known.
import type { Logger } from "pino";
import type { HandlerModule, InstallationOctokit, Outcome } from "../handler.js";
import type { ClaimedDelivery, HandlerOutcomeRecord } from "../queue/engine-types.js";
import type { LoadedPolicy } from "../policy/types.js";
import { handlerContext, type ContextDeps, type DeliveryFacts } from "./contexts.js";
import { gatePolicy } from "./policy-gate.js";
import { errorText, redactSecrets } from "./redact.js";
import { pushTouchesPolicy, routeDelivery } from "./route.js";

export type OutcomeSummary = Pick<HandlerOutcomeRecord, "handler" | "status" | "detail" | "retryable">;

export interface RunDeliveryDeps extends ContextDeps {
  log: Logger;
  /** The run's stop signal (shutdown, lease lost), handed to every handler's context. */
  signal: AbortSignal;
  /** Persist one handler's outcome (guarded by the run's lease). */
  recordOutcome(handler: string, outcome: Outcome, seconds: number): Promise<void>;
  observe?: { outcome(handler: string, status: Outcome["status"], seconds: number): void };
}

function needsRun(prior: HandlerOutcomeRecord | undefined): boolean {
  return prior === undefined || (prior.status === "failed" && prior.retryable);
}

function summarize(handler: string, o: Outcome): OutcomeSummary {
  switch (o.status) {
    case "done":
      return { handler, status: "done", detail: o.summary, retryable: false };
    case "skipped":
      return { handler, status: "skipped", detail: o.reason, retryable: false };
    case "failed":
      return { handler, status: "failed", detail: o.error, retryable: o.retryable !== false };
  }
}

function isOutcome(value: unknown): value is Outcome {
  if (typeof value !== "object" || value === null) return false;
  const o = value as Record<string, unknown>;
  return (
    o.status === "done" ||
    (o.status === "skipped" && typeof o.reason === "string") ||
    (o.status === "failed" && typeof o.error === "string")
  );
}

function repositoryOf(payload: unknown): { owner: string; repo: string } | undefined {
  const r = (payload as { repository?: { name?: unknown; owner?: { login?: unknown } } } | null)?.repository;
  if (typeof r?.name !== "string" || typeof r.owner?.login !== "string") return undefined;
  return { owner: r.owner.login, repo: r.name };
}

/** What every handler of this run shares; `failure` makes all of them fail without running. */
interface Preparation {
  octokit: InstallationOctokit | undefined;
  policy: LoadedPolicy | undefined;
  policyError: string | undefined;
  failure: Outcome | undefined;
}

async function prepare(
  deps: RunDeliveryDeps,
  facts: DeliveryFacts,
  repo: { owner: string; repo: string } | undefined,
  toRun: HandlerModule<any>[],
): Promise<Preparation> {
  const prep: Preparation = { octokit: undefined, policy: undefined, policyError: undefined, failure: undefined };
  if (facts.installationId !== undefined) {
    try {
      prep.octokit = await deps.octokits.octokitFor(facts.installationId);
    } catch (e) {
      prep.failure = { status: "failed", error: `no Octokit for installation ${facts.installationId}: ${errorText(e)}` };
      return prep;
    }
  }
  if (prep.octokit && repo && toRun.some((h) => h.policy)) {
    try {
      prep.policy = await deps.policies.load(prep.octokit, repo);
    } catch (e) {
      prep.policyError = `policy of ${repo.owner}/${repo.repo} could not be loaded: ${errorText(e)}`;
    }
  }
  return prep;
}

async function runOne(
  deps: RunDeliveryDeps,
  handler: HandlerModule<any>,
  facts: DeliveryFacts,
  prep: Preparation,
  attempt: number,
): Promise<Outcome> {
  if (prep.failure) return prep.failure;
  let policy: unknown;
  if (handler.policy && prep.policyError) return { status: "failed", error: prep.policyError };
  if (handler.policy && prep.policy) {
    const gate = gatePolicy(handler.policy, prep.policy);
    if (!gate.run) return { status: "skipped", reason: gate.reason };
    policy = gate.policy;
  }
  const log = deps.log.child({ handler: handler.name });
  const ctx = handlerContext(deps, handler, facts, { octokit: prep.octokit, policy, log, attempt, signal: deps.signal, policySources: prep.policy?.sources ?? [] });
  try {
    const result = await handler.handle(ctx);
    if (result === undefined) return { status: "done" };
    if (!isOutcome(result)) return { status: "failed", error: "handler returned something that is not an outcome", retryable: false };
    return result;
  } catch (e) {
    return { status: "failed", error: errorText(e) };
  }
}

/**
 * Runs the handlers of `claim` that have no final outcome yet. Returns the outcomes of every
 * handler routed to the delivery (earlier final ones included), for the retry decision.
 */
export async function runDelivery(
  deps: RunDeliveryDeps,
  handlers: readonly HandlerModule<any>[],
  claim: ClaimedDelivery,
): Promise<OutcomeSummary[]> {
  const d = claim.delivery;
  const prior = new Map(claim.outcomes.map((o) => [o.handler, o]));
  const routed = routeDelivery(handlers, d.event, d.action);
  const toRun = routed.filter((h) => needsRun(prior.get(h.name)));
  const kept: OutcomeSummary[] = routed.filter((h) => !toRun.includes(h)).map((h) => prior.get(h.name)!);
  if (toRun.length === 0) return kept;

  let payload: unknown = claim.parsed;
  try {
    payload ??= JSON.parse(d.payload);
  } catch {
    const bad: Outcome = { status: "failed", error: "stored payload is not valid JSON", retryable: false };
    await Promise.all(toRun.map((h) => deps.recordOutcome(h.name, bad, 0)));
    return [...kept, ...toRun.map((h) => summarize(h.name, bad))];
  }
  const repo = repositoryOf(payload);
  if (repo && pushTouchesPolicy(d.event, payload)) deps.policies.invalidate(repo.owner, repo.repo);

  const facts: DeliveryFacts = { deliveryId: d.id, name: d.event, action: d.action, payload, installationId: d.installationId };
  const prep = await prepare(deps, facts, repo, toRun);
  const secrets = [deps.config.privateKey, ...deps.config.webhookSecrets, deps.config.reviewerToken ?? ""];

  const ran = await Promise.all(
    toRun.map(async (handler) => {
      const started = performance.now();
      let outcome = await runOne(deps, handler, facts, prep, (prior.get(handler.name)?.attempts ?? 0) + 1);
      if (outcome.status === "failed") outcome = { ...outcome, error: redactSecrets(outcome.error, secrets) };
      if (outcome.status === "failed" && deps.signal.aborted) {
        // Told to stop, not a failure of its own: the run goes back to the queue whole.
        deps.log.info({ handler: handler.name }, `handler ${handler.name} stopped; it runs again from the queue`);
        return summarize(handler.name, outcome);
      }
      const seconds = (performance.now() - started) / 1000;
      deps.observe?.outcome(handler.name, outcome.status, seconds);
      const level = outcome.status === "failed" ? "warn" : "info";
      deps.log[level]({ handler: handler.name, outcome, seconds }, `handler ${handler.name} ${outcome.status}`);
      await deps.recordOutcome(handler.name, outcome, seconds);
      return summarize(handler.name, outcome);
    }),
  );
  return [...kept, ...ran];
}
