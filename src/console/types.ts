// What the console reads and does, as narrow views of Steward's parts.
import type { Logger } from "pino";
import type { StewardStore } from "../store/contract.js";
import type { Access } from "./github.js";
import type { Viewer } from "./html.js";
import type { ApiBudget } from "./budget.js";
import type { ReplicaEntry } from "../coordination/replicas.js";
import type { HandlerConsole } from "../handler.js";
import type { HandlerStartStatus, StartState } from "../engine/handler-starts.js";

export interface ConsoleStore {
  readonly browse: StewardStore["browse"];
  readonly deliveries: Pick<StewardStore["deliveries"], "getDelivery" | "oldestDueAt">;
  /**
   * `set`: sign-out's revocation record, which every replica and every later process reads, and the
   * record of what people did to deliveries (`audit` too); `claim` and `delete`: pauses.
   */
  readonly kv: Pick<StewardStore["kv"], "get" | "set" | "list" | "audit" | "auditLog" | "claim" | "delete">;
  readonly tasks: Pick<StewardStore["tasks"], "listTasks">;
}

export interface ConsoleDeps {
  store: ConsoleStore;
  /** Queue depth (the intake's). */
  depth(): Promise<number>;
  replay(deliveryId: string): Promise<void>;
  handlers: readonly string[];
  /** Each handler's start as the engine recorded it, in the handlers' order. */
  handlerStarts?(): readonly HandlerStartView[];
  /** What handlers show in the console: their pages and overview sections. */
  handlerConsoles?: readonly { handler: string; console: HandlerConsole }[];
  appId: number;
  apiUrl: string;
  oauth: { clientId: string; clientSecret: string } | undefined;
  sessionSecret: string;
  /** The console's public base URL (STEWARD_STATUS_URL, else where Steward listens). */
  baseUrl(): string;
  /** The policy schema served at /steward.schema.json. */
  schemaJson: string;
  budget: ApiBudget;
  /** The effective policy of a repository, with where each value came from (undefined: not available). */
  policyOf?(owner: string, repo: string): Promise<PolicyView | undefined>;
  /** The app's installations as GitHub last counted them (GET /app), undefined until known. */
  installationCount?(): number | undefined;
  /** A pause or resume was written here: the engine reads the pauses again now. */
  pausesChanged?(): void;
  /** Redis or PostgreSQL deployments: the replicas alive and what each holds (absent with SQLite). */
  replicas?(): Promise<ReplicaEntry[]>;
  logger: Logger;
}

export interface PolicyView {
  /** Files read, in order of precedence (lowest first). */
  sources: string[];
  /**
   * Dotted path (and its keys, for a key that holds a dot) -> value and the file:line it came from
   * ("default" when from the handler's defaults).
   */
  values: { path: string; keys: string[]; value: unknown; from: string }[];
  errors: string[];
}

/** What a page handler gets. */
export interface PageContext {
  viewer: Viewer;
  access: Access;
  /** Repositories the viewer may see: every query is limited to these. */
  scope: readonly string[];
  url: URL;
  /** The path's segments after `/console/`, percent-decoded (malformed escapes never reach a page: 400). */
  segments: readonly string[];
  deps: ConsoleDeps;
}

/** A handler's start: the engine's record, or that it has no start step, or that none was recorded yet. */
export interface HandlerStartView extends Omit<HandlerStartStatus, "state"> {
  state: StartState | "no start step" | "not recorded";
}
