// The `steward` package: everything a handler module may use. Handlers (built-in ones in
// handlers/ and third-party ones) import only this entry and `steward/policy`; anything else
// under src/ is the framework's own business and may change without notice.
export {
  defineHandler,
  type HandlerModule,
  type HandlerContext,
  type HandlerEventName,
  type RoutedDelivery,
  type PayloadOf,
  type TaskContext,
  type RunContext,
  type ServiceContext,
  type InstallationOctokit,
  type Outcome,
  type Once,
  type OnceEffect,
  type OnceResult,
  type ScheduleRequest,
  type Scheduler,
  type SimulationInput,
  type HandlerCommand,
  type CommandContext,
  type CommandStore,
  type HandlerConsole,
  type ConsolePage,
  type ConsoleContext,
  type ConsoleDelivery,
  type ConsoleHtml,
  type ConsoleTask,
} from "./handler.js";
// The modules STEWARD_HANDLERS names that declare policy: what a check validating policy files must know.
export { policyModules } from "./modules/load.js";
export type {
  PolicySection,
  PolicyDocumentSpec,
  SectionReview,
  SemanticCheck,
  CheckOptions,
  JsonSchema,
  Problem,
} from "./policy/types.js";
export type {
  CheckReporter,
  CheckReport,
  CheckRunRef,
  CheckConclusion,
  CheckAction,
  Annotation,
  AnnotationLevel,
} from "./check-runs/types.js";
export type { Store, KeyValue, AuditEntry } from "./store/types.js";
export type { StewardConfig } from "./config/types.js";
// Helpers for policy sections: the same glob, matcher and duration rules the built-in handlers use.
export {
  globError,
  matchesAny,
  textMatcher,
  textMatcherError,
  parseDuration,
  type TextMatcher,
} from "./policy/patterns.js";
export { didYouMean, suggestionNote } from "./policy/suggest.js";
// Effects and state shared across replicas.
export { withStoreLock, type StoreLockOptions } from "./coordination/lock.js";
export { rateLimitWaitMs, rateLimitedUntil, clockTime, delayedText } from "./api/rate-limit.js";
export { BudgetReserved } from "./api/rate-limit.js";
export { cachedGet, requestFnOf, ResponseCache, type RequestFn, type RawResponse } from "./api/conditional.js";
export { downloadWithoutAuth } from "./api/client.js";
export { StewardOctokit } from "./api/octokit.js";
// Long work: stop between steps when told, hold a job lease so one copy runs at a time, and keep
// pattern matching within a delivery's CPU budget.
export { stoppedError, isStopped, throwIfStopped, stoppableDelay } from "./lifecycle/abort-scope.js";
export {
  withJobLease,
  describeHolder,
  LeaseHeld,
  type JobLeaseOptions,
  type LeaseHolder,
} from "./coordination/job-lease.js";
export { MatchBudget, MatchBudgetExceeded } from "./policy/match-budget.js";
export {
  boundedMatch,
  INLINE_WORK,
  MAX_LINE_CHARS,
  matchInline,
  matchWork,
  type BoundedMatch,
} from "./policy/bounded-match.js";
// Report-only mode: the operator's switch and the policy's `mode` key.
export { ACT_MODE_SCHEMA, operatorReportOnly, reportReason, type ActMode } from "./policy/mode.js";
// Secret hygiene: Steward's own settings and credentials are never a policy's to read.
export { isSettingName, settingPaths } from "./config/setting-names.js";
export { containsRegisteredSecret } from "./log/redact.js";
