// The contract between Steward's framework and a handler module. Everything a
// handler may rely on is declared here; built-in handlers in `handlers/` and
// third-party modules loaded through STEWARD_HANDLERS use exactly this API.
import type { EmitterWebhookEvent, EmitterWebhookEventName } from "@octokit/webhooks";
import type { Logger } from "pino";
import type { Store } from "./store/types.js";
import type { Outcome, ScheduleRequest } from "./store/records.js";
import type { PolicySection, PolicyDocumentSpec } from "./policy/types.js";
import type { CheckReporter } from "./check-runs/types.js";
import type { InstallationOctokit } from "./api/types.js";
import type { StewardConfig } from "./config/types.js";
import type { Html } from "./console/html.js";

/** An Octokit authenticated as one installation; the API client declares it (`src/api/types.ts`). */
export type { InstallationOctokit };

/** What a run ends with and what a handler schedules: the store keeps both, so it declares them (`src/store/records.ts`). */
export type { Outcome, ScheduleRequest };

export interface Scheduler {
  schedule(request: ScheduleRequest): Promise<void>;
  cancel(key: string): Promise<void>;
}

/** A side effect for `ctx.once`: `run` performs it; `check` looks at the world for it. */
export interface OnceEffect<T> {
  /** Performs the effect; its JSON-serialisable result is remembered. Throwing retries later. */
  run(): Promise<T>;
  /**
   * Asked only when an earlier attempt started this effect and did not record it (a crash, an
   * error, an answer lost on the way back): return the effect's result if it is already there
   * (the label is on the issue, the comment exists), `undefined` if it is not. Without `check`,
   * such an effect is run again, so `run` must then be safe to repeat.
   */
  check?(): Promise<T | undefined>;
}

/** `ran`: performed now; `found`: an earlier attempt's effect, seen by `check`; `recorded`: done before. */
export type OnceResult<T> = { state: "ran" | "found" | "recorded"; value: T };

/** Do a side effect once per key (scoped to the handler), recorded only after it succeeded. */
export type Once = <T>(key: string, effect: OnceEffect<T>) => Promise<OnceResult<T>>;

/** An event a handler subscribes to: `workflow_run` (every action), `workflow_run.completed`, or `*` (every event). */
export type HandlerEventName = EmitterWebhookEventName | "*";

/** The payload type of the deliveries a handler subscribed to `E` receives (a union for several names). */
export type PayloadOf<E extends HandlerEventName> = [E] extends [EmitterWebhookEventName]
  ? EmitterWebhookEvent<E>["payload"]
  : EmitterWebhookEvent["payload"];

/** What a handler run and a scheduled task run both receive: the services and the run's own facts. */
export interface RunContext<P = unknown> {
  /** Installation id from the payload (or the task), when there is one. */
  installationId: number | undefined;
  /** Octokit authenticated as that installation. Throws when the delivery or task has no installation. */
  octokit: InstallationOctokit;
  /** Load the policy for another ref or repository (same validation and cache). */
  loadPolicy(opts: { owner: string; repo: string; ref?: string }): Promise<P>;
  /** Logger bound to the delivery or task, its installation and repository, and this handler's name. */
  log: Logger;
  /** The durable store (idempotency keys, handler state). */
  store: Store;
  /** Do a side effect once per key, across retries and redeliveries, without losing it (see `OnceEffect`). */
  once: Once;
  /** Durable scheduler for work that must happen later (delays, waits, re-evaluation). */
  scheduler: Scheduler;
  /** Check-run reporter: the only way handlers create or update check runs. */
  checks: CheckReporter;
  /** Attempt number of this handler on this delivery (or of this task), starting at 1. */
  attempt: number;
  /** Service configuration (read-only). */
  config: Readonly<import("./config/types.js").StewardConfig>;
  /**
   * The time by Steward's clock: the host's, or in the sandbox the hub's, which can be moved.
   * Decide by it (windows, freezes, "due" checks); a task scheduled `runAt: now() + d` runs when
   * this clock has moved on by `d`, however it got there.
   */
  now(): Date;
  /**
   * Fires when this work must stop: at shutdown, and when its lease was lost (another process
   * took it). Long work stops between steps, records how far it got and returns; the API
   * client refuses the work's new requests once it fired.
   */
  signal: AbortSignal;
}

/** What the framework hands a handler for one delivery; `payload` is typed by the events it subscribed to. */
export interface HandlerContext<E extends HandlerEventName = HandlerEventName, P = unknown> extends RunContext<P> {
  /** `X-GitHub-Delivery` of the delivery being processed. */
  deliveryId: string;
  /** `X-GitHub-Event` name, e.g. `workflow_run`. */
  name: string;
  /** `payload.action` when present. */
  action: string | undefined;
  /** The parsed delivery payload, typed by the handler's `events`. */
  payload: PayloadOf<E>;
  /**
   * The handler's validated policy section for the delivery's repository (org file merged under the
   * repository file), with the section's defaults applied. `undefined` when the delivery has no repository.
   */
  policy: P | undefined;
  /**
   * The files `policy` was merged from, e.g. `["acme/.github:.github/steward.yml",
   * "acme/web:.github/steward.yml"]`: what a report must withhold where its readers could not
   * read one of them (see handlers/shared/visibility.ts). Empty when there is no policy.
   */
  policySources?: readonly string[];
}

/** What a scheduled task receives. */
export interface TaskContext<P = unknown> extends RunContext<P> {
  key: string;
  data: unknown;
}

/** Framework-level services a handler may start at boot (e.g. a periodic sync). */
export interface ServiceContext {
  log: Logger;
  store: Store;
  scheduler: Scheduler;
  config: Readonly<import("./config/types.js").StewardConfig>;
  /** Octokit for an installation. */
  octokitFor(installationId: number): Promise<InstallationOctokit>;
  /** Octokit authenticated as the app (JWT). */
  appOctokit(): Promise<InstallationOctokit>;
  /** The time by Steward's clock (see HandlerContext.now). */
  now(): Date;
  /** Fires at shutdown: background work the handler started stops. */
  signal: AbortSignal;
}

/** What the intake reads of a delivery before anything parses it: enough to route it. */
export interface RoutedDelivery {
  event: string;
  action: string | undefined;
  /** `owner/name` of `payload.repository`, when the payload has one. */
  repository: string | undefined;
}

export interface HandlerModule<P = unknown, E extends HandlerEventName = HandlerEventName> {
  /** Unique name, e.g. `rerun`. Used in outcomes, metrics, logs and idempotency keys. */
  name: string;
  /** Events it takes: `workflow_run` (every action) or `workflow_run.completed`. */
  events: readonly E[];
  /**
   * Optional narrowing of `events`, judged when the delivery arrives from its event, action and
   * repository (and the service's configuration): false when `handle` would skip it whatever its
   * payload and policy say, e.g. a handler that acts only in the admin repository. A delivery no
   * handler takes is recorded done at the intake, never queued, claimed or run. It must be cheap
   * and must not throw (a throw counts as taking the delivery).
   */
  takes?(delivery: RoutedDelivery, config: StewardConfig): boolean;
  /**
   * GitHub App permissions it needs beyond those its events imply, e.g. `{ issues: "write" }` for a
   * module that labels issues. `steward manifest` and `steward register` grant them only when the
   * module is loaded (STEWARD_HANDLERS). Optional; Steward never checks them at run time.
   */
  permissions?: Readonly<Record<string, "read" | "write">>;
  /** Its section of `.github/steward.yml` (schema, defaults, extra checks). Optional. */
  policy?: PolicySection<P>;
  /** Extra admin-repository policy documents it owns, e.g. `.github/steward/secrets.yml`. */
  documents?: readonly PolicyDocumentSpec[];
  /** Process one delivery. Throwing records `failed` and retries the handler with backoff. */
  handle(ctx: HandlerContext<E, P>): Promise<Outcome | void>;
  /** Run a task this handler scheduled. Throwing retries it with backoff. */
  onTask?(ctx: TaskContext<P>): Promise<Outcome | void>;
  /**
   * Called at service start (e.g. to schedule periodic work). It runs in the background: the
   * service takes deliveries meanwhile, and a failure is logged and retried with backoff.
   */
  start?(ctx: ServiceContext): Promise<void>;
  /** `steward` subcommands it adds (built-in handlers only: the CLI lists `handlers/index.ts`). */
  commands?: readonly HandlerCommand[];
  /** What the console shows of the records it keeps. */
  console?: HandlerConsole;
  /**
   * Its part of impact simulation (`steward simulate`, the steward/config check): what its policy
   * section would have decided on the facts it stored when it decided, compared with what it did,
   * as one clause, e.g. `the last 200 failed runs would have been re-run 3 times (was 5)`. Asked
   * only when it has a policy section and that section is valid.
   */
  simulate?(input: SimulationInput<P>): Promise<string>;
}

/** What a handler's impact simulation is given. */
export interface SimulationInput<P = unknown> {
  /** The section as the policy being simulated has it (validated, defaults applied). */
  policy: P;
  /** Where the handler stored its decision facts. */
  store: Pick<Store, "list">;
  /** `owner/name`: simulate on that repository's facts; undefined: on every repository's. */
  repository?: string;
}

/** A `steward NAME` subcommand. */
export interface HandlerCommand {
  name: string;
  /** Its line in `steward help`. */
  summary: string;
  /** Printed for `steward NAME --help` (starts `usage: steward NAME`); nothing runs then. */
  usage: string;
  /** Runs with the arguments after the name; resolves to the exit code (2: a usage error). */
  run(args: string[], ctx: CommandContext): Promise<number>;
}

/** What a command gets: its input and output, and the service's own parts, opened as the service opens them. */
export interface CommandContext {
  /** The environment, `.env` merged in. */
  env: Readonly<Record<string, string | undefined>>;
  out(text: string): void;
  err(text: string): void;
  /** Whether `err` is a terminal (progress can rewrite one line). */
  errIsTty: boolean;
  /**
   * Fires on Ctrl-C or SIGTERM once asked for (a second one exits at once): for long work that
   * stops between steps. Commands that do not ask keep the default (Ctrl-C exits).
   */
  interrupted(): AbortSignal;
  /** The service's configuration from `env`, or what is wrong with it. */
  loadConfig(): { config: StewardConfig } | { problem: string };
  /** The service's logger for a command: warnings and worse, on stderr. */
  logger(config: StewardConfig): Logger;
  /** GitHub clients with the service's credentials, throttling and write spacing. */
  github(
    config: StewardConfig,
    logger: Logger,
  ): { appOctokit(): Promise<InstallationOctokit>; octokitFor(installationId: number): Promise<InstallationOctokit> };
  /**
   * The service's store (PostgreSQL or Redis when configured, else the SQLite file in `dataDir`);
   * with `mustExist`, undefined when that file was never created (looking leaves no store behind).
   */
  openStore(
    settings: Pick<StewardConfig, "dataDir" | "redisUrl" | "postgresUrl">,
    opts?: { mustExist?: boolean; logger?: Logger },
  ): Promise<CommandStore | undefined>;
}

export interface CommandStore {
  kv: Store;
  close(): void | Promise<void>;
}

/** Trusted console markup: made only by `ConsoleContext.html`, from escaped parts. */
export type ConsoleHtml = Html;

/** The console's part for one handler: pages of its own and a section of the overview. */
export interface HandlerConsole {
  pages?: readonly ConsolePage[];
  /** A section of the overview (refreshed live with it); undefined shows nothing. */
  overview?(ctx: ConsoleContext): Promise<ConsoleHtml | undefined>;
  /**
   * The full explanation of what the handler decided on one delivery, as its check run gives it,
   * from its own record of the decision (undefined: it recorded none for this delivery). Shown on
   * the delivery's page, to those who may see the delivery.
   */
  explain?(ctx: ConsoleContext, delivery: ConsoleDelivery): Promise<ConsoleHtml | undefined>;
}

/** A delivery as a handler's explanation reads it. */
export interface ConsoleDelivery {
  id: string;
  event: string;
  action: string | undefined;
  repository: string | undefined;
  /** The parsed payload (undefined when it did not parse). */
  payload: unknown;
}

/** A console page at `/console/PATH`, linked from the navigation. */
export interface ConsolePage {
  /** One path segment, e.g. `flakes` for `/console/flakes` (a trailing slash is accepted). */
  path: string;
  /** Its heading, window title and link text, e.g. `Flaky jobs`. */
  title: string;
  /** For organisation owners only: the console answers others 403 and hides the link. */
  ownersOnly?: boolean;
  render(ctx: ConsoleContext): Promise<ConsoleHtml>;
}

/**
 * What a console page or section renders from. Access is the console's: `repositories` and
 * `owns` are what the signed-in person may see, and a page shows only records within them.
 */
export interface ConsoleContext {
  /** `owner/name` of every repository the person can access. */
  repositories: readonly string[];
  /** Accounts (organisations, lower case) the person owns. */
  owns: readonly string[];
  /** The page's query string. */
  query: URLSearchParams;
  /** The handler's records and the audit trail, read-only. */
  store: Pick<Store, "get" | "list" | "auditLog">;
  /** The tasks this handler scheduled that have not finished. */
  tasks(): Promise<ConsoleTask[]>;
  /** GitHub's web address (`https://github.com` or the Enterprise Server's), for links. */
  webUrl: string;
  /** Tagged template: every interpolation is escaped unless it is `ConsoleHtml` (or an array of it). */
  html(strings: TemplateStringsArray, ...values: unknown[]): ConsoleHtml;
  /** A `<time>` element in UTC; `never` for undefined. */
  time(at: Date | number | undefined): ConsoleHtml;
  /**
   * Markdown as check runs and reasons are written (code spans, emphasis, links), rendered safely:
   * HTML in it is shown as text and links go only to http(s) addresses. `inline` for one line.
   */
  markdown(text: string, opts?: { inline?: boolean }): ConsoleHtml;
}

export interface ConsoleTask {
  key: string;
  runAt: Date;
  data: unknown;
  status: "pending" | "running" | "dead";
  lastError: string | undefined;
}

/**
 * Identity helper for type inference: the event names in `events` type `ctx.payload` in `handle`
 * (`["workflow_run.completed"]` gives the completed workflow_run payload), and the policy section
 * types `ctx.policy`.
 */
export function defineHandler<P = unknown, const E extends HandlerEventName = HandlerEventName>(
  module: HandlerModule<P, E>,
): HandlerModule<P, E> {
  return module;
}
