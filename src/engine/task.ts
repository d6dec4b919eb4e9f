// One run of a claimed task through the one run path, then the decision: done, retry later,
// or dead. A task stopped by shutdown or a lost lease goes back to the queue as it was.
import type { Logger } from "pino";
import type { HandlerModule } from "../handler.js";
import type { ClaimedTask } from "../store/records.js";
import type { StewardStore } from "../store/contract.js";
import { decideTask, type RetryPolicy } from "./retry.js";
import { taskContext, type ContextDeps } from "../dispatch/contexts.js";
import { installationOctokit, runHandler, type RunPathDeps } from "./run.js";
import { outcomeRecord } from "../store/recorded.js";
import { ROOT_CONTEXT, SpanKind } from "@opentelemetry/api";
import { inSpan } from "../log/trace.js";
import { reportError } from "../log/errors.js";

export interface TaskRunDeps extends ContextDeps, RunPathDeps {
  queue: Pick<StewardStore, "tasks" | "leases">;
  handlersByName: ReadonlyMap<string, HandlerModule<any>>;
  retry: RetryPolicy;
  logger: Logger;
}

export async function runClaimedTask(deps: TaskRunDeps, claim: ClaimedTask, signal: AbortSignal): Promise<void> {
  const t = claim.task;
  // Each run of a task is a trace of its own.
  const attributes = {
    "steward.handler": t.handler,
    "steward.task": t.key,
    "steward.attempt": t.attempts + 1,
    ...(t.installationId === undefined ? {} : { "github.installation": String(t.installationId) }),
  };
  return inSpan(`task ${t.handler}`, { parent: ROOT_CONTEXT, kind: SpanKind.CONSUMER, attributes }, () =>
    runTask(deps, claim, signal),
  );
}

async function runTask(deps: TaskRunDeps, claim: ClaimedTask, signal: AbortSignal): Promise<void> {
  const t = claim.task;
  const tlog = deps.logger.child({ task: t.key, handler: t.handler, installation: t.installationId });
  const handler = deps.handlersByName.get(t.handler);
  const attempt = t.attempts + 1;
  let error: string | undefined;
  let retryable = true;
  let notBefore: Date | undefined;
  let stopped = false;
  if (!handler?.onTask) {
    error = `no loaded handler module "${t.handler}" runs tasks`;
    retryable = false;
    stopped = signal.aborted;
  } else {
    const result = await runHandler(deps, { handler: t.handler, log: tlog, signal, attempt }, async () => {
      const { octokit, failure } = await installationOctokit(deps, t.installationId);
      if (failure) return failure;
      return handler.onTask!(taskContext(deps, handler, t, { octokit, log: tlog, attempt, signal }));
    });
    stopped = result.stopped;
    if (result.outcome.status === "failed") {
      ({ detail: error, retryable } = outcomeRecord(result.outcome));
      notBefore = result.outcome.notBefore;
    }
  }
  if (stopped) {
    // Stopped, not failed: the task goes back as it was and resumes where it left off.
    await deps.queue.leases.releaseLease(claim.token);
    tlog.info("task stopped before it finished; it is back in the queue");
    return;
  }
  const decision = decideTask(error, retryable, attempt, deps.retry, new Date(), notBefore);
  await deps.queue.tasks.finishTask(claim, decision);
  if (decision.status === "retry") tlog.warn({ attempt, retryAt: decision.retryAt, error }, "task will be retried");
  else if (decision.status === "dead") {
    tlog.error({ attempt, error }, "task parked as dead");
    reportError(error, { what: "task parked as dead", tags: { handler: t.handler, attempts: attempt } });
  }
}
