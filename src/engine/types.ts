// What the engine offers the service and what it is built from.
import type { Clock } from "../lifecycle/clock.js";
import type { Logger } from "pino";
import type { HandlerModule, InstallationOctokit, Outcome, Scheduler, ServiceContext } from "../handler.js";
import type { CheckReporter } from "../check-runs/types.js";
import type { StewardConfig } from "../config/types.js";
import type { OctokitFactory } from "../api/types.js";
import type { PolicyLoader } from "../policy/types.js";
import type { ClaimedDelivery, ClaimedTask } from "../store/records.js";
import type { StewardStore } from "../store/contract.js";
import type { Backoff } from "../lifecycle/backoff.js";
import type { DeliveryIntake } from "../intake/delivery-intake.js";
import type { HandlerStarts, StartState } from "./handler-starts.js";
import type { ProbeIntervals } from "./readiness.js";

export interface Engine {
  intake: DeliveryIntake;
  start(): Promise<void>;
  /** Stop claiming; let in-flight work finish within `timeoutMs`, else hand it back to the queue. */
  stop(timeoutMs: number): Promise<void>;
  /** Resolves when nothing is queued, awaiting a retry or running, and no task is due now. */
  idle(): Promise<void>;
  /** Run a stored delivery again through every handler. */
  replay(deliveryId: string): Promise<void>;
  /** The scheduler a handler module gets in its contexts. */
  schedulerFor(handler: string): Scheduler;
  /** This process paused or resumed something: read the pauses again now and claim what a resume freed. */
  pausesChanged(): void;
  /** Each handler's start (they run in the background after start()). */
  handlerStarts(): ReturnType<HandlerStarts["status"]>;
}

export interface EngineObserver {
  outcome(handler: string, status: Outcome["status"], seconds: number): void;
  handlerStart?(handler: string, state: StartState): void;
  /** A delivery was claimed, `seconds` after it was due. */
  claimed?(seconds: number): void;
}

export interface EngineOptions {
  config: StewardConfig;
  store: StewardStore;
  handlers: HandlerModule<any>[];
  octokits: OctokitFactory;
  policies: PolicyLoader;
  logger: Logger;
  checkReporterFor: (octokit: InstallationOctokit, deliveryId?: string) => CheckReporter;
  observe?: EngineObserver;
  /**
   * Aborted when the shutdown bound is reached: the API client given to handlers refuses every
   * request from then on and cuts off those in flight.
   */
  hardStop?: AbortController;
  /** Backoff of handler starts that failed (default 1 s doubling to 5 min). */
  startBackoff?: Backoff;
  /** Backoff between attempts (attempt count comes from config.maxAttempts). */
  retry?: { baseMs: number; maxMs: number };
  /** Lease of a running delivery or task; renewed every third of it while it runs. */
  leaseMs?: number;
  /** Longest sleep between looks at the queue (work queued by other processes, e.g. `steward deliveries replay`). */
  pollMs?: number;
  /** How long `done` deliveries are kept (default 14 days); dead ones are kept until replayed. */
  retentionMs?: number;
  /** How often readiness probes whether the store can record (default readiness.ts: 1 s while failing, 10 s while not). */
  readinessProbes?: ProbeIntervals;
  /** Steward's clock (default the host's): handlers read it, and tasks follow its jumps (the sandbox hub's clock). */
  clock?: Clock;
}

/** One leased piece of work a worker runs. */
export type Work = { kind: "delivery"; claim: ClaimedDelivery } | { kind: "task"; claim: ClaimedTask };
