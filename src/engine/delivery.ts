// One run of a claimed delivery: route it, prepare the installation's Octokit and the
// repository's policy once, run every handler that still needs to run (concurrently, each
// isolated, through the one run path), persist each outcome as soon as it is known, then
// decide: done, retry later, or dead.
import type { Logger } from "pino";
import type { HandlerModule, InstallationOctokit, Outcome } from "../handler.js";
import type { ClaimedDelivery, HandlerOutcomeRecord } from "../store/records.js";
import type { StewardStore } from "../store/contract.js";
import type { LoadedPolicy } from "../policy/types.js";
import { decideDelivery, type RetryPolicy } from "./retry.js";
import { handlerContext, type ContextDeps, type DeliveryFacts } from "../dispatch/contexts.js";
import { gatePolicy } from "../dispatch/policy-gate.js";
import { errorText } from "../log/redact.js";
import {
  engineTakes,
  pushTouchesPolicy,
  renewsRepositories,
  repositoriesRenewed,
  routeDelivery,
} from "../dispatch/route.js";
import { installationOctokit, runHandler, type RunPathDeps } from "./run.js";
import type { ApiCallLog } from "./api-calls.js";
import { outcomeRecord } from "../store/recorded.js";
import { SpanKind, type Span } from "@opentelemetry/api";
import { deliveryRunContext, inSpan, tracer } from "../log/trace.js";
import { reportError } from "../log/errors.js";

export type OutcomeSummary = Pick<HandlerOutcomeRecord, "handler" | "status" | "detail" | "retryable"> & {
  notBefore?: Date;
};

export interface DeliveryRunDeps extends ContextDeps, RunPathDeps {
  /** The queue behind the run (handlers get only `store`, the kv part's handler methods). */
  queue: Pick<StewardStore, "deliveries" | "leases">;
  handlers: readonly HandlerModule<any>[];
  retry: RetryPolicy;
  logger: Logger;
  apiCalls: ApiCallLog;
}

function needsRun(prior: HandlerOutcomeRecord | undefined): boolean {
  return prior === undefined || (prior.status === "failed" && prior.retryable);
}

function summarize(handler: string, o: Outcome): OutcomeSummary {
  return { handler, ...outcomeRecord(o), ...(o.status === "failed" && o.notBefore ? { notBefore: o.notBefore } : {}) };
}

function repositoryOf(payload: unknown): { owner: string; repo: string } | undefined {
  const r = (payload as { repository?: { name?: unknown; owner?: { login?: unknown } } } | null)?.repository;
  if (typeof r?.name !== "string" || typeof r.owner?.login !== "string") return undefined;
  return { owner: r.owner.login, repo: r.name };
}

/** `owner/name` as the intake read it from `repository.full_name` (a name holds no slash). */
function repositoryNamed(fullName: string | undefined): { owner: string; repo: string } | undefined {
  const slash = fullName?.indexOf("/") ?? -1;
  if (slash <= 0 || slash === fullName!.length - 1) return undefined;
  return { owner: fullName!.slice(0, slash), repo: fullName!.slice(slash + 1) };
}

const UNPARSABLE = {
  status: "failed",
  error: "stored payload is not valid JSON",
  retryable: false,
} as const satisfies Outcome;

/** Thrown by a handler context's `payload` when the stored text is not JSON; the run's outcome is UNPARSABLE. */
class UnparsablePayload extends Error {}

/**
 * The delivery's payload, read and parsed the first time something reads it: a handler reading
 * `ctx.payload`, or a push that may change the policy. A handler that decides from the event, the
 * action and its policy alone (off for the repository, an action it does not act on) costs no
 * parse, and on a store that reads the text only when asked (SQLite), no read.
 */
class LazyPayload {
  #value: unknown;
  #state: "unread" | "parsed" | "unparsable" = "unread";

  constructor(private readonly delivery: Pick<ClaimedDelivery["delivery"], "payload">) {}

  /** The parsed payload, or undefined when the text is not JSON. */
  get(): { value: unknown } | undefined {
    if (this.#state === "unread") {
      // Read outside the parse's guard: a store that cannot read now is an error, not bad JSON.
      const text = this.delivery.payload;
      try {
        this.#value = JSON.parse(text);
        this.#state = "parsed";
      } catch {
        this.#state = "unparsable";
      }
    }
    return this.#state === "parsed" ? { value: this.#value } : undefined;
  }
}

/**
 * The facts every handler of a run shares. A class, so that `payload` is its prototype's getter: a
 * getter made for one object (an object literal's) gives that object a hidden class of its own,
 * which V8 keeps until its next full collection, and with it what the getter's closure holds; every
 * run's objects were promoted out of the young generation (docs/decisions/0024-getters-made-per-object.md).
 */
class RunFacts implements DeliveryFacts {
  readonly deliveryId: string;
  readonly name: string;
  readonly action: string | undefined;
  readonly installationId: number | undefined;
  readonly #payload: LazyPayload;

  constructor(d: ClaimedDelivery["delivery"], payload: LazyPayload) {
    this.deliveryId = d.id;
    this.name = d.event;
    this.action = d.action;
    this.installationId = d.installationId;
    this.#payload = payload;
  }

  get payload(): unknown {
    const parsed = this.#payload.get();
    if (!parsed) throw new UnparsablePayload(UNPARSABLE.error);
    return parsed.value;
  }
}

/** What every handler of this run shares; `failure` makes all of them fail without running. */
interface Preparation {
  octokit: InstallationOctokit | undefined;
  policy: LoadedPolicy | undefined;
  policyError: string | undefined;
  failure: Outcome | undefined;
}

async function prepare(
  deps: DeliveryRunDeps,
  facts: DeliveryFacts,
  repo: { owner: string; repo: string } | undefined,
  toRun: HandlerModule<any>[],
): Promise<Preparation> {
  const { octokit, failure } = await installationOctokit(deps, facts.installationId);
  const prep: Preparation = { octokit, policy: undefined, policyError: undefined, failure };
  if (failure) return prep;
  if (octokit && repo && toRun.some((h) => h.policy)) {
    try {
      prep.policy = await inSpan(
        "policy load",
        { attributes: { "github.repository": `${repo.owner}/${repo.repo}` } },
        () => deps.policies.load(octokit, repo),
      );
    } catch (e) {
      prep.policyError = `policy of ${repo.owner}/${repo.repo} could not be loaded: ${errorText(e)}`;
    }
  }
  return prep;
}

/** The handler's step: the shared failure, its policy gate, then its `handle`. */
function handlerStep(
  deps: DeliveryRunDeps,
  handler: HandlerModule<any>,
  facts: DeliveryFacts,
  prep: Preparation,
  attempt: number,
  log: Logger,
  signal: AbortSignal,
) {
  return async (): Promise<Outcome | void> => {
    if (prep.failure) return prep.failure;
    let policy: unknown;
    if (handler.policy && prep.policyError) return { status: "failed", error: prep.policyError };
    if (handler.policy && prep.policy) {
      const gate = gatePolicy(handler.policy, prep.policy);
      if (!gate.run) return { status: "skipped", reason: gate.reason };
      policy = gate.policy;
    }
    const ctx = handlerContext(deps, handler, facts, {
      octokit: prep.octokit,
      policy,
      log,
      attempt,
      signal,
      policySources: prep.policy?.sources ?? [],
    });
    try {
      return await handler.handle(ctx);
    } catch (e) {
      if (e instanceof UnparsablePayload) return UNPARSABLE;
      throw e;
    }
  };
}

/** What every log line of a delivery's run carries. */
interface DeliveryBindings {
  delivery: string;
  event: string;
  installation: number | undefined;
  repository: string | undefined;
}

/**
 * Runs the handlers of `claim` that have no final outcome yet. Returns the outcomes of every
 * handler routed to the delivery (earlier final ones included), for the retry decision.
 */
async function runHandlers(
  deps: DeliveryRunDeps,
  claim: ClaimedDelivery,
  log: Logger,
  bindings: DeliveryBindings,
  signal: AbortSignal,
  saveOutcome: (handler: string, outcome: Outcome, seconds: number) => void,
): Promise<OutcomeSummary[]> {
  const d = claim.delivery;
  const prior = new Map(claim.outcomes.map((o) => [o.handler, o]));
  const routed = routeDelivery(deps.handlers, d, deps.config);
  const toRun = routed.filter((h) => needsRun(prior.get(h.name)));
  const kept: OutcomeSummary[] = routed.filter((h) => !toRun.includes(h)).map((h) => prior.get(h.name)!);

  const payload = new LazyPayload(d);
  // The repository as the intake read it, so that a run whose handlers are all off for it parses
  // nothing. A push that may touch a policy file is parsed at once, handlers or not (the intake
  // queues it for that: engineTakes), as it may change the policy its handlers are gated by.
  const policyMayChange = d.event === "push" && engineTakes({ event: d.event, payload: d.payload });
  // A repository or installation event: what was known missing of its repositories may exist now.
  if (renewsRepositories(d.event)) {
    const parsed = payload.get();
    for (const r of parsed ? repositoriesRenewed(d.event, parsed.value) : []) deps.policies.invalidate(r.owner, r.repo);
  }
  let repo = policyMayChange ? undefined : repositoryNamed(d.repository);
  if (!repo) {
    if (toRun.length === 0 && !policyMayChange) return kept;
    const parsed = payload.get();
    if (!parsed) {
      for (const h of toRun) saveOutcome(h.name, UNPARSABLE, 0);
      return [...kept, ...toRun.map((h) => summarize(h.name, UNPARSABLE))];
    }
    repo = repositoryOf(parsed.value);
    if (repo && pushTouchesPolicy(d.event, parsed.value)) deps.policies.invalidate(repo.owner, repo.repo);
  }
  if (toRun.length === 0) return kept;

  // One for all the delivery's handlers: the first to read `payload` parses it.
  const facts = new RunFacts(d, payload);
  const calls = deps.apiCalls.forDelivery(d.id);
  const prep = await calls.during("(preparation)", d.attempts, () => prepare(deps, facts, repo, toRun));
  const ran = await Promise.all(
    toRun.map(async (handler) => {
      const attempt = (prior.get(handler.name)?.attempts ?? 0) + 1;
      const result = await runHandler(
        deps,
        { handler: handler.name, log, signal, attempt, wrap: (fn) => calls.during(handler.name, attempt, fn) },
        // A child of the root with the delivery's bindings, never a child of `log`: pino makes a
        // child's parent its prototype, and a prototype made per delivery gets a hidden class of its
        // own that keeps the run's objects alive until a full collection (decision 0026).
        handlerStep(
          deps,
          handler,
          facts,
          prep,
          attempt,
          deps.logger.child({ ...bindings, handler: handler.name }),
          signal,
        ),
      );
      if (!result.stopped) saveOutcome(handler.name, result.outcome, result.seconds);
      return summarize(handler.name, result.outcome);
    }),
  );
  await calls.save();
  return [...kept, ...ran];
}

export async function runClaimedDelivery(
  deps: DeliveryRunDeps,
  claim: ClaimedDelivery,
  signal: AbortSignal,
  /** Called once the run has asked for its finish: what is left is the store's commit. */
  finishing?: () => void,
): Promise<void> {
  const d = claim.delivery;
  const claimed = new Date();
  // Its next run is when it became due (recorded, retry time, replayed or given back): the claim keeps it.
  const waited = Math.max(0, (claimed.getTime() - d.nextRunAt.getTime()) / 1000);
  deps.observe?.claimed?.(waited);
  // The run joins the trace its receipt began (log/trace.ts), whichever process received it.
  const parent = deliveryRunContext(d.id);
  const attributes = {
    "github.delivery_id": d.id,
    "github.event": d.event,
    ...(d.action ? { "github.action": d.action } : {}),
    "steward.attempt": d.attempts,
  };
  tracer.startSpan("delivery queued", { startTime: d.nextRunAt, attributes }, parent).end(claimed);
  await inSpan(
    "delivery run",
    { parent, kind: SpanKind.CONSUMER, attributes: { ...attributes, "steward.queue_seconds": waited } },
    (span) => runDelivery(deps, claim, signal, span, finishing),
  );
}

async function runDelivery(
  deps: DeliveryRunDeps,
  claim: ClaimedDelivery,
  signal: AbortSignal,
  span: Span,
  finishing: (() => void) | undefined,
) {
  const { queue } = deps;
  const d = claim.delivery;
  const bindings: DeliveryBindings = {
    delivery: d.id,
    event: d.action ? `${d.event}.${d.action}` : d.event,
    installation: d.installationId,
    repository: d.repository,
  };
  const dlog = deps.logger.child(bindings);
  // Outcome writes are not awaited one by one: each is asked for as soon as it is known, and
  // the finish below then shares their group commit instead of waiting a commit for them. If
  // one failed while the finish held, only that handler's outcome is lost: a retry runs it
  // again, as after a crash between its effect and saving its outcome.
  const outcomeWrites: Promise<void>[] = [];
  const outcomes = await runHandlers(deps, claim, dlog, bindings, signal, (handler, outcome, seconds) => {
    const write = queue.deliveries.recordOutcome(claim.token, d.id, handler, outcome, seconds).then((held) => {
      if (!held) dlog.warn({ handler }, "lease lost; outcome not saved (the delivery runs again)");
    });
    write.catch(() => undefined); // settled below; a failure must not go unhandled meanwhile
    outcomeWrites.push(write);
  });
  if (signal.aborted && outcomes.some((o) => o.status === "failed")) {
    await Promise.allSettled(outcomeWrites);
    await queue.leases.releaseLease(claim.token);
    span.setAttribute("steward.decision", "stopped");
    dlog.info("delivery stopped before it finished; it is back in the queue");
    return;
  }
  const decision = decideDelivery(outcomes, d.attempts, deps.retry, new Date());
  span.setAttribute("steward.decision", decision.status);
  const finished = queue.deliveries.finishDelivery(claim.token, d.id, decision);
  finished.catch(() => undefined);
  finishing?.();
  await Promise.all(outcomeWrites);
  const held = await finished;
  if (!held) return;
  if (decision.status === "failed") {
    dlog.warn(
      { attempt: d.attempts, retryAt: decision.retryAt, error: decision.lastError },
      "delivery will be retried",
    );
  } else if (decision.status === "dead") {
    dlog.error({ attempts: d.attempts, error: decision.lastError }, "delivery parked as dead");
    reportError(decision.lastError, {
      what: "delivery parked as dead",
      tags: { delivery: d.id, event: d.event, attempts: d.attempts },
    });
  } else {
    dlog.debug({ handlers: outcomes.length }, "delivery done");
  }
}
