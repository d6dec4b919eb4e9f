// Builds what a handler sees: HandlerContext per delivery, TaskContext per task,
// ServiceContext at start. Octokit and check reporter are resolved lazily so a handler
// that never calls the API never needs an installation.
import type { Logger } from "pino";
import type {
  HandlerContext,
  HandlerModule,
  InstallationOctokit,
  Scheduler,
  ServiceContext,
  TaskContext,
} from "../handler.js";
import type { CheckReporter } from "../check-runs/types.js";
import type { StewardConfig } from "../config/types.js";
import type { OctokitFactory } from "../api/types.js";
import type { PolicyLoader } from "../policy/types.js";
import type { Store } from "../store/types.js";
import type { Clock } from "../lifecycle/clock.js";
import { gatePolicy } from "./policy-gate.js";
import { onceFor } from "./once.js";

export interface ContextDeps {
  config: StewardConfig;
  store: Store;
  octokits: OctokitFactory;
  policies: PolicyLoader;
  /** The delivery's id when there is one: its check runs link to the console's page of it. */
  checkReporterFor: (octokit: InstallationOctokit, deliveryId?: string) => CheckReporter;
  schedulerFor(handler: string): Scheduler;
  /** Steward's clock (the host's, or the sandbox hub's). */
  clock: Clock;
}

function missingInstallation(what: string): never {
  throw new Error(`${what} needs an installation, and this one has none`);
}

/** `loadPolicy` for a handler: its section of another repository or ref, refused when invalid. */
export function policyLoaderFor<P>(
  deps: ContextDeps,
  handler: HandlerModule<P>,
  octokit: InstallationOctokit | undefined,
): (opts: { owner: string; repo: string; ref?: string }) => Promise<P> {
  return async (target) => {
    if (!octokit) missingInstallation("loadPolicy");
    const loaded = await deps.policies.load(octokit, target);
    if (!handler.policy) return undefined as P;
    const gate = gatePolicy<P>(handler.policy, loaded);
    if (!gate.run) throw new Error(`${target.owner}/${target.repo}: ${gate.reason}`);
    return gate.policy as P;
  };
}

function lazyChecks(
  deps: ContextDeps,
  octokit: InstallationOctokit | undefined,
  deliveryId: string | undefined,
): CheckReporter {
  let reporter: CheckReporter | undefined;
  return {
    report: (report) => {
      if (!octokit) return Promise.reject(new Error("check runs need an installation, and this one has none"));
      reporter ??= deps.checkReporterFor(octokit, deliveryId);
      return reporter.report(report);
    },
  };
}

// A context's getters are these functions, one for every context, reading what the context holds
// under a symbol: a getter made for one object (a closure) gives that object a hidden class of its
// own, which V8 keeps until its next full collection, and with it everything the closure holds;
// every run's objects were promoted out of the young generation (docs/decisions/0024-getters-made-per-object.md).
const OCTOKIT = Symbol("octokit");
const FACTS = Symbol("delivery facts");

function octokitOf(this: { [OCTOKIT]?: InstallationOctokit }): InstallationOctokit {
  return this[OCTOKIT] ?? missingInstallation("octokit");
}

function payloadOf(this: { [FACTS]: DeliveryFacts }): unknown {
  return this[FACTS].payload;
}

export interface DeliveryFacts {
  deliveryId: string;
  name: string;
  action: string | undefined;
  payload: unknown;
  installationId: number | undefined;
}

export interface WorkExtra {
  octokit: InstallationOctokit | undefined;
  log: Logger;
  attempt: number;
  signal: AbortSignal;
}

/**
 * What a handler sees in both kinds of context, added to `target` (the kind's own fields): own
 * properties as a spread of the context would copy them, `octokit` a getter that throws without an
 * installation. Added in place: merging two objects through property descriptors cost 4-5 us a
 * context, a handler run each.
 */
function withCommonParts<T extends object, P>(
  target: T,
  deps: ContextDeps,
  handler: HandlerModule<P>,
  extra: WorkExtra & { deliveryId?: string; owner: string },
) {
  Object.defineProperty(target, OCTOKIT, { value: extra.octokit });
  Object.defineProperty(target, "octokit", {
    get: octokitOf,
    enumerable: true,
    configurable: true,
  });
  const common = target as T & {
    readonly octokit: InstallationOctokit;
    loadPolicy: ReturnType<typeof policyLoaderFor<P>>;
    log: Logger;
    store: Store;
    once: ReturnType<typeof onceFor>;
    scheduler: Scheduler;
    checks: CheckReporter;
    attempt: number;
    config: StewardConfig;
    now: () => Date;
    signal: AbortSignal;
  };
  const { octokit } = extra;
  common.loadPolicy = policyLoaderFor(deps, handler, octokit);
  common.log = extra.log;
  common.store = deps.store;
  common.once = onceFor(deps.store, handler.name, extra.owner);
  common.scheduler = deps.schedulerFor(handler.name);
  common.checks = lazyChecks(deps, octokit, extra.deliveryId);
  common.attempt = extra.attempt;
  common.config = deps.config;
  common.now = () => deps.clock.now();
  common.signal = extra.signal;
  return common;
}

export function handlerContext<P>(
  deps: ContextDeps,
  handler: HandlerModule<P>,
  facts: DeliveryFacts,
  extra: WorkExtra & { policy: P | undefined; policySources?: readonly string[] },
): HandlerContext<any, P> {
  const specific = { deliveryId: facts.deliveryId, name: facts.name, action: facts.action };
  // Read through: the engine parses a stored payload the first time a handler reads it.
  Object.defineProperty(specific, FACTS, { value: facts });
  Object.defineProperty(specific, "payload", { get: payloadOf, enumerable: true, configurable: true });
  Object.assign(specific, {
    installationId: facts.installationId,
    policy: extra.policy,
    policySources: extra.policySources ?? [],
  });
  return withCommonParts(specific as HandlerContext<any, P>, deps, handler, {
    ...extra,
    deliveryId: facts.deliveryId,
    owner: `delivery ${facts.deliveryId}`,
  });
}

export function taskContext<P>(
  deps: ContextDeps,
  handler: HandlerModule<P>,
  task: { key: string; data: unknown; installationId: number | undefined },
  extra: WorkExtra,
): TaskContext<P> {
  const specific = { key: task.key, data: task.data, installationId: task.installationId };
  return withCommonParts(specific, deps, handler, { ...extra, owner: `task ${task.key}` });
}

export function serviceContext(
  deps: ContextDeps,
  log: Logger,
  scheduler: Scheduler,
  signal: AbortSignal,
): ServiceContext {
  return {
    signal,
    log,
    store: deps.store,
    scheduler,
    config: deps.config,
    octokitFor: (id) => deps.octokits.octokitFor(id),
    appOctokit: () => deps.octokits.appOctokit(),
    now: () => deps.clock.now(),
  };
}
