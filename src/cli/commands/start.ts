// `steward start`: run the service. With APP_ID set it is the real app, configured from the
// environment; with no APP_ID at all it runs against the sandbox hub (no credentials needed).
import { writeFile } from "node:fs/promises";
import { isatty } from "node:tty";
import { dirname, join, relative, resolve } from "node:path";
import { ConfigError, loadBuiltinHandlers, loadConfig, loadHandlerPaths, loadLogSettings } from "../../config/env.js";
import { SANDBOX_DATA_DIR } from "../operator-store.js";
import { AppManifestError, appManifestOf, readAppManifest, type AppManifest } from "../../modules/app-manifest.js";
import { DataDirInUseError } from "../../store/sqlite/service-lock.js";
import { LegacyOctokitError } from "../../modules/legacy-octokit.js";
import { StoreSchemaError } from "../../store/sqlite/schema.js";
import { createLogger, type Logger } from "../../log/logger.js";
import { scrub } from "../../log/redact.js";
import { loadDotEnv } from "../dotenv.js";
import { packageFile } from "../../package-root.js";

const HOW_TO_CONFIGURE = `steward start: APP_ID is not set, and the sandbox hub is not available in this build.
To run as a real GitHub App, set at least:
  APP_ID              the app's numeric id
  PRIVATE_KEY_PATH    path to the app's private key (.pem), or PRIVATE_KEY with its contents
  WEBHOOK_SECRET      the app's webhook secret
See README.md "Configuration" for every variable.
`;

/** The environment settings that apply in sandbox mode as in real mode (the app's identity comes from the hub). */
function sandboxSettings(env: NodeJS.ProcessEnv): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (
      value !== undefined &&
      (/^STEWARD_/.test(name) ||
        ["PORT", "HOST", "LOG_LEVEL", "LOG_FORMAT", "WEBHOOK_PATH", "WEBHOOK_PROXY_URL"].includes(name))
    )
      kept[name] = value;
  }
  return kept;
}

/** What a person types to send a signed delivery by hand (the secret is read from a file, never printed). */
function byHand(webhookUrl: string, secretFile: string): string[] {
  return [
    '    signed webhook:  body=\'{"zen":"Hello from curl","hook_id":1}\'',
    `                     sig="sha256=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$(cat ${secretFile})" | sed 's/^.* //')"`,
    `                     curl -X POST ${webhookUrl} -H 'Content-Type: application/json' -H 'X-GitHub-Event: ping' \\`,
    `                       -H "X-GitHub-Delivery: by-hand-$RANDOM$RANDOM" -H "X-Hub-Signature-256: $sig" -d "$body"`,
    `                     (202: recorded; the webhook secret is in ${secretFile})`,
  ];
}

function sandboxBanner(o: {
  webhookUrl: string;
  hubUrl: string;
  secretFile: string;
  dataDir: string;
  installationId: number | undefined;
  hosted: { path: string; manifest?: AppManifest }[];
  builtins: "all" | "none" | string[];
}): string {
  const { webhookUrl, hubUrl, secretFile } = o;
  const hosting = o.hosted.map(({ path, manifest }) =>
    manifest
      ? `    hosting:         ${path} (its ${relative(process.cwd(), manifest.file) || manifest.file}: events ${manifest.events.join(", ") || "none"})`
      : `    hosting:         ${path} (no app.yml of its own: Steward's grant)`,
  );
  const ownManifest = o.hosted.some((h) => h.manifest);
  return (
    [
      "",
      "  Steward is running against the SANDBOX hub: a local simulation of the GitHub API, not GitHub.",
      `    hub (REST API):  ${hubUrl}   control surface: ${hubUrl}/_sandbox/ (docs/sandbox.md)`,
      `    webhooks to:     ${webhookUrl}`,
      `    console:         ${new URL(webhookUrl).origin}/console (sign in as octo-admin, an owner, or dev-dana, a member)`,
      `    data directory:  ${o.dataDir} (kept between runs; \`steward deliveries list\` reads it)`,
      `    demo world:      organisation acme (installation ${o.installationId ?? "none"}), repositories .github, web, api, service-billing`,
      `    built-in:        ${o.builtins === "all" ? "all built-in handlers" : o.builtins === "none" ? "none (STEWARD_BUILTIN_HANDLERS=none)" : o.builtins.join(", ")}`,
      ...hosting,
      `    try it:          curl -X POST ${hubUrl}/_sandbox/control/openIssue -H 'Content-Type: application/json' \\`,
      `                       -d '{"owner":"acme","repo":"web","title":"Hello from the sandbox"}'`,
      ...byHand(webhookUrl, secretFile),
      ...(ownManifest
        ? [
            `  To run as a real GitHub App: steward register ${registerArgs(o.builtins, o.hosted)}`,
            `  (GitHub's manifest flow: the apps' own app.yml events and permissions with the built-in handlers' you enable),`,
            "  then start again with the APP_ID, PRIVATE_KEY and WEBHOOK_SECRET it writes to .env.",
          ]
        : [
            "  To run as a real GitHub App, register app.yml and set APP_ID, PRIVATE_KEY_PATH (or PRIVATE_KEY)",
            '  and WEBHOOK_SECRET; README.md "Configuration" lists every variable.',
          ]),
      "",
    ].join("\n") + "\n"
  );
}

export const usage = `usage: steward start [--sandbox | --register]
  runs the service, configured from the environment (README.md "Configuration"):
    APP_ID, PRIVATE_KEY_PATH (or PRIVATE_KEY), WEBHOOK_SECRET   the GitHub App
    PORT, HOST, GITHUB_API_URL, STEWARD_*                       where it listens, what it talks to
  with no APP_ID, at a terminal it asks whether to register the app first (GitHub's manifest flow,
  as \`steward register\`, from app.yml or the hosted apps' own, merged with the enabled built-in
  handlers'; credentials to .env) or to run against the sandbox hub (a local simulation of GitHub;
  no credentials); --register and --sandbox answer in advance, and without a terminal it is the
  sandbox. --sandbox runs the sandbox even with APP_ID set
  SIGTERM or SIGINT stop it: new deliveries are refused, running work stops between steps,
  and it exits within STEWARD_SHUTDOWN_TIMEOUT (default 25s)`;

interface Closable {
  close(): Promise<void>;
}

/**
 * Resolves when SIGTERM or SIGINT arrives; a second signal exits at once. Listened for from the
 * moment the service starts to start, so a signal during start-up (an orchestrator stopping a pod
 * that is still starting) is a stop like any other once it is up, never the default action that
 * kills the process without closing the store.
 */
function watchSignals(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let received = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (received) {
        process.stderr.write(`steward: second signal (${signal}): exiting without waiting\n`);
        process.exit(1);
      }
      received = true;
      resolve(signal);
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
}

/** Past the shutdown bound, how long close() may still take (HTTP and store close) before the process exits regardless. */
const EXIT_MARGIN_MS = 5_000;

async function serveUntilSignal(
  service: Closable,
  log: Logger,
  shutdownTimeoutMs: number,
  signals: Promise<NodeJS.Signals>,
): Promise<number> {
  const signal = await signals;
  log.info({ signal }, "signal received");
  const watchdog = setTimeout(() => {
    log.error({ boundMs: shutdownTimeoutMs + EXIT_MARGIN_MS }, "shutdown overran its bound; exiting now");
    process.exit(1);
  }, shutdownTimeoutMs + EXIT_MARGIN_MS);
  watchdog.unref();
  await service.close();
  clearTimeout(watchdog);
  // Shut down means gone: a timer, socket or retry still holding the event loop does not keep
  // the process alive (this fires only if something does).
  setTimeout(() => process.exit(0), 100).unref();
  return 0;
}

/** Run `load`, turning a ConfigError into its one line on stderr. */
function configOrExit<T>(load: () => T): T | undefined {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`steward: ${scrub(error.message)}\n`);
      return undefined;
    }
    throw error;
  }
}

/** Where the sandbox listens by default: fixed, so the banner's URLs and a browser tab outlive a restart. */
export const SANDBOX_DEFAULT_PORT = 3000;

/**
 * The hub's port: STEWARD_SANDBOX_PORT, else the one after Steward's (3001 by default), else any
 * free port when Steward's is (PORT=0, as tests run it).
 */
function hubPort(env: NodeJS.ProcessEnv, stewardPort: number): number | string {
  const given = env.STEWARD_SANDBOX_PORT?.trim();
  if (given) {
    const n = Number(given);
    return Number.isInteger(n) && n >= 0 && n <= 65535
      ? n
      : `STEWARD_SANDBOX_PORT must be a port number (got "${given}")`;
  }
  return stewardPort === 0 ? 0 : stewardPort + 1;
}

function inUse(error: unknown): number | undefined {
  const e = error as { code?: unknown; port?: unknown };
  return e?.code === "EADDRINUSE" ? (typeof e.port === "number" ? e.port : -1) : undefined;
}

async function runSandbox(env: NodeJS.ProcessEnv, why: string, opts: ServeOptions): Promise<number> {
  type StackModule = typeof import("../../sandbox/stack.js");
  let stack: StackModule;
  try {
    stack = (await import("../../sandbox/stack.js")) as StackModule;
  } catch (error) {
    // Only a missing hub (a production install, without dev dependencies) means "not available";
    // anything else is a fault to show, not to hide behind the configuration help.
    if ((error as { code?: string }).code !== "ERR_MODULE_NOT_FOUND" || !String(error).includes("sandbox-hub"))
      throw error;
    process.stderr.write(HOW_TO_CONFIGURE);
    return 1;
  }
  const { sandboxGrant } = await import("../../sandbox/hub.js");
  const signals = watchSignals();
  // A person at a terminal reads the log; a pipe gets JSON unless LOG_FORMAT says otherwise.
  const logEnv: NodeJS.ProcessEnv = {
    ...env,
    ...(env.LOG_FORMAT?.trim() ? {} : { LOG_FORMAT: process.stdout.isTTY ? "pretty" : "json" }),
  } as NodeJS.ProcessEnv;
  const settings = configOrExit(() => loadLogSettings(logEnv));
  if (!settings) return 1;
  const log = createLogger({ level: settings.logLevel, format: settings.logFormat });
  // PORT, HOST, STEWARD_HANDLERS and every other STEWARD_* setting apply as in real mode.
  const settingsEnv = sandboxSettings(env);
  const port = env.PORT?.trim() ? Number(env.PORT) : SANDBOX_DEFAULT_PORT;
  const hub = hubPort(env, Number.isInteger(port) ? port : SANDBOX_DEFAULT_PORT);
  if (typeof hub === "string") {
    process.stderr.write(`steward: ${hub}\n`);
    return 1;
  }
  process.stderr.write(sandboxChoiceLine(env, why, opts));
  // Kept between runs and printed, so `steward deliveries` (with no APP_ID) finds what the console shows.
  const dataDir = resolve(env.STEWARD_DATA_DIR?.trim() || SANDBOX_DATA_DIR);
  let running;
  try {
    const modulePaths = loadHandlerPaths(env);
    const app = sandboxGrant({ builtins: loadBuiltinHandlers(env), modulePaths });
    running = await stack.startSandboxStack({
      dataDir,
      logger: log,
      hub: { app, port: hub },
      env: {
        PORT: String(port),
        LOG_LEVEL: settings.logLevel,
        LOG_FORMAT: settings.logFormat,
        ...settingsEnv,
      },
    });
  } catch (error) {
    const port = inUse(error);
    if (port !== undefined) {
      process.stderr.write(
        `steward: port ${port < 0 ? "" : `${port} `}is already in use (another steward start?): ` +
          `choose Steward's with PORT and the hub's with STEWARD_SANDBOX_PORT (0: any free port)\n`,
      );
      return 1;
    }
    if (
      error instanceof ConfigError ||
      error instanceof DataDirInUseError ||
      error instanceof StoreSchemaError ||
      error instanceof AppManifestError ||
      error instanceof LegacyOctokitError
    ) {
      process.stderr.write(`steward: ${scrub(error.message)}\n`);
      return 1;
    }
    throw error;
  }
  const secretFile = join(dirname(running.hub.env.PRIVATE_KEY_PATH), "webhook-secret");
  await writeFile(secretFile, running.hub.env.WEBHOOK_SECRET, { mode: 0o600 });
  log.info(
    {
      webhookUrl: running.webhookUrl,
      hubUrl: running.config.apiUrl,
      dataDir,
      realApp: "set APP_ID, PRIVATE_KEY_PATH (or PRIVATE_KEY) and WEBHOOK_SECRET",
    },
    "sandbox mode (no APP_ID): Steward is running against the local sandbox hub",
  );
  // For the person at the terminal; the JSON line above is for log pipelines.
  process.stderr.write(
    sandboxBanner({
      webhookUrl: running.webhookUrl,
      hubUrl: running.config.apiUrl,
      secretFile,
      dataDir,
      installationId: running.hub.control.installation("acme")?.id,
      hosted: hostedApps(loadHandlerPaths(env)),
      builtins: loadBuiltinHandlers(env),
    }),
  );
  return serveUntilSignal(running, log, running.config.shutdownTimeoutMs, signals);
}

/** `steward register`'s arguments for the same handlers and apps. */
function registerArgs(builtins: "all" | "none" | string[], hosted: { path: string }[]): string {
  return registerArgv(
    builtins,
    hosted.map((h) => h.path),
  ).join(" ");
}

/** `steward register`'s argument list for these built-in handlers (all when not named) and hosted apps. */
function registerArgv(builtins: "all" | "none" | string[], paths: readonly string[]): string[] {
  return [...(builtins === "all" ? [] : ["--handlers", builtins === "none" ? "none" : builtins.join(",")]), ...paths];
}

/** Each hosted module and the app.yml it brought (if any), for the banner. */
function hostedApps(paths: readonly string[]): { path: string; manifest?: AppManifest }[] {
  return paths.map((path) => {
    const manifest = appManifestOf(path);
    return manifest ? { path, manifest } : { path };
  });
}

/**
 * Hosted apps whose own app.yml subscribes to events Steward's app.yml (at the package root, what
 * `steward register` registers by default) lacks. A manifest that cannot be read is left to the
 * loader and the banner, which name it.
 */
export function manifestGaps(paths: readonly string[]): { path: string; file: string; events: string[] }[] {
  const steward = new Set(readAppManifest(packageFile("app.yml")).events);
  const gaps: { path: string; file: string; events: string[] }[] = [];
  for (const path of paths) {
    let own: AppManifest | undefined;
    try {
      own = appManifestOf(path);
    } catch (error) {
      if (error instanceof AppManifestError) continue;
      throw error;
    }
    const events = own?.events.filter((e) => !steward.has(e)) ?? [];
    if (own && events.length > 0) gaps.push({ path, file: own.file, events });
  }
  return gaps;
}

export async function run(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const flags = firstRunFlags(argv);
  if (typeof flags === "string") {
    process.stderr.write(`steward start: ${flags}\n${usage}\n`);
    return 2;
  }
  const args = flags.rest;
  if (args.length > 0) {
    // `probot run ./index.js` habit: say how an app is loaded here instead.
    const app = args.find((a) => !a.startsWith("-")) ?? "./index.js";
    process.stderr.write(
      `steward start: unexpected argument "${args[0]}" (configuration comes from the environment)\n` +
        `To host a Probot app or handler module: steward run ${app} (it alone), or name it in STEWARD_HANDLERS ` +
        `(comma-separated paths) beside the built-in handlers: STEWARD_HANDLERS=${app} steward start\n${usage}\n`,
    );
    return 2;
  }
  return serve(env, flags.choice ? { choice: flags.choice } : {});
}

/** What a run without APP_ID does: `--sandbox` / `--register`, or the answer to the question asked at a terminal. */
export type FirstRun = "sandbox" | "register";

/** `--sandbox` and `--register` among `args`, and the other arguments; or what is wrong with them. */
export function firstRunFlags(args: readonly string[]): { choice?: FirstRun; rest: string[] } | string {
  const wanted = args.filter((a) => a === "--sandbox" || a === "--register");
  if (new Set(wanted).size > 1) return "--sandbox and --register exclude each other";
  const rest = args.filter((a) => a !== "--sandbox" && a !== "--register");
  return wanted.length > 0 ? { choice: wanted[0]!.slice(2) as FirstRun, rest } : { rest };
}

/** Who would be registered: the hosted apps by path, else Steward itself from its app.yml. */
function registrant(env: NodeJS.ProcessEnv): string {
  const paths = loadHandlerPaths(env);
  return paths.length > 0 ? paths.join(" and ") : "Steward";
}

export interface ServeOptions {
  /** `--sandbox` or `--register`; absent, a run without APP_ID asks at a terminal. */
  choice?: FirstRun;
  /** The apps `steward run` was given (its command is what the sandbox line suggests). */
  runApps?: readonly string[];
}

/** The command that registers what this run hosts instead of running in the sandbox. */
function registerCommand(opts: ServeOptions): string {
  return opts.runApps ? `steward run --register ${opts.runApps.join(" ")}` : "steward start --register";
}

function sandboxChoiceLine(env: NodeJS.ProcessEnv, why: string, opts: ServeOptions): string {
  return (
    `steward: no APP_ID is set, so this runs in the SANDBOX (${why}), not on GitHub.\n` +
    `  To register ${registrant(env)} as a GitHub App instead (GitHub's manifest flow, from ` +
    `${loadHandlerPaths(env).length > 0 ? "the app's own app.yml" : "app.yml"}): ${registerCommand(opts)}\n`
  );
}

/**
 * No APP_ID and no flag: at a terminal, ask whether to register now or run in the sandbox (the
 * default, Enter); elsewhere (a pipe, a service manager) the sandbox, saying so.
 */
async function askFirstRun(env: NodeJS.ProcessEnv): Promise<{ how: FirstRun; why: string }> {
  // isatty, not process.stdin: a run that does not ask leaves stdin unopened.
  if (!isatty(0) || !isatty(2)) return { how: "sandbox", why: "no terminal to ask at" };
  const { githubUrl } = (await import("./register.js")).serverUrls(env);
  const { createInterface } = await import("node:readline/promises");
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(
      `No APP_ID is set: Steward has no GitHub App to run as.\n` +
        `  r  register ${registrant(env)} on ${githubUrl} now (GitHub's manifest flow, from ` +
        `${loadHandlerPaths(env).length > 0 ? "the app's own app.yml" : "app.yml"}), then start as that app\n` +
        `  s  run in the sandbox, a local simulation of GitHub (nothing to register)\n` +
        `Register or sandbox? [r/S] `,
    );
    return /^\s*r/i.test(answer) ? { how: "register", why: "" } : { how: "sandbox", why: "chosen at the prompt" };
  } finally {
    rl.close();
  }
}

/**
 * `steward register` for what this run hosts (the apps' own app.yml with the enabled built-in
 * handlers' needs), on Steward's port; then the service as the app it wrote to .env.
 */
async function registerThenServe(env: NodeJS.ProcessEnv): Promise<number> {
  const paths = loadHandlerPaths(env);
  const builtins = configOrExit(() => loadBuiltinHandlers(env));
  if (!builtins) return 1;
  const port = env.PORT?.trim() || String(SANDBOX_DEFAULT_PORT);
  process.stderr.write(
    `steward: no APP_ID is set, so ${registrant(env)} is registered as a GitHub App first (GitHub's manifest flow); ` +
      `Steward starts as that app once it is.\n`,
  );
  // The apps are named as arguments, so their own app.yml is the manifest's base.
  const { STEWARD_HANDLERS: _listed, ...rest } = env;
  const { run: register } = await import("./register.js");
  const registered = await register(
    ["--port", port, ...registerArgv(builtins, paths)],
    rest,
    "Steward now starts as it and receives its deliveries once it is installed",
  );
  if (registered !== 0) return registered;
  const next: NodeJS.ProcessEnv = { ...env };
  loadDotEnv(next, process.cwd());
  if (!next.APP_ID?.trim()) {
    process.stderr.write("steward: the registration wrote no APP_ID to .env; not starting\n");
    return 1;
  }
  process.stderr.write(`steward: registered; starting as that GitHub App (APP_ID ${next.APP_ID} from .env)\n`);
  return serve(next);
}

/** The service as configured by `env` (STEWARD_HANDLERS, STEWARD_BUILTIN_HANDLERS included): `steward start` and `steward run`. */
export async function serve(env: NodeJS.ProcessEnv, opts: ServeOptions = {}): Promise<number> {
  const { choice } = opts;
  const noApp = env.APP_ID === undefined || env.APP_ID.trim() === "";
  if (choice === "register" && !noApp) {
    process.stderr.write(
      "steward: --register is for a first run, and APP_ID is already set (the environment or .env): " +
        "to register another app, steward register\n",
    );
    return 2;
  }
  if (choice === "sandbox") return runSandbox(env, "--sandbox", opts);
  if (noApp) {
    const chosen = choice ? { how: choice, why: "" } : await askFirstRun(env);
    if (chosen.how === "register") return registerThenServe(env);
    return runSandbox(env, chosen.why, opts);
  }
  const config = configOrExit(() => loadConfig(env));
  if (!config) return 1;
  const log = createLogger({ level: config.logLevel, format: config.logFormat });
  for (const gap of manifestGaps(config.handlerPaths))
    log.warn(
      { handler: gap.path, appYml: gap.file, events: gap.events },
      `hosted app ${gap.path} subscribes to ${gap.events.join(", ")} (its ${gap.file}), which Steward's app.yml ` +
        `does not: GitHub sends an app only the events it is registered for, so unless this app was registered ` +
        `with them (steward register ${gap.path} merges its app.yml), these listeners never run`,
    );
  const signals = watchSignals();
  try {
    const { createSteward } = await import("../../app.js");
    const steward = await createSteward({ config, logger: log });
    log.info(
      { url: steward.url, webhookPath: config.webhookPath, apiUrl: config.apiUrl, dataDir: config.dataDir },
      `listening on ${steward.url}${config.webhookPath}`,
    );
    return await serveUntilSignal(steward, log, config.shutdownTimeoutMs, signals);
  } catch (error) {
    // A refusal that says what to do is one line, not a stack.
    if (error instanceof LegacyOctokitError) {
      // Every call named, each on its line, for the person fixing the app.
      log.fatal(
        { calls: error.calls },
        "steward could not start: hosted code calls Octokit methods that no longer exist",
      );
      process.stderr.write(`steward: ${error.message}\n`);
    } else if (error instanceof DataDirInUseError || error instanceof StoreSchemaError || error instanceof ConfigError)
      log.fatal({ error: error.message }, "steward could not start");
    else log.fatal({ err: error }, "steward could not start");
    return 1;
  }
}
