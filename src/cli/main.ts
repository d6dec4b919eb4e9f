// `steward` command line. Each command lives in its own module under ./commands and
// is imported lazily so `steward validate` does not pay for the server's start-up.

// Not `import pkg from "../../package.json"`: tsc would copy it into dist/, where package-root.ts
// would take that copy for the package root and miss app.yml.
import { packageVersion } from "../package-root.js";
import { DotEnvError, loadDotEnv } from "./dotenv.js";
import { StoreSchemaError } from "../store/sqlite/schema.js";

/** A command module: `usage` is printed for --help without running anything. */
type CommandModule = { usage: string; run(args: string[]): Promise<number> };
type Command = { summary: string; load: () => Promise<CommandModule> };

export const commands: Record<string, Command> = {
  start: { summary: "run the service (with no APP_ID: against the sandbox hub)", load: () => import("./commands/start.js") },
  validate: { summary: "check policy files: steward validate FILE...", load: () => import("./commands/validate.js") },
  sandbox: { summary: "run the sandbox hub alone: steward sandbox [--port P] [--webhook-url URL]", load: () => import("./commands/sandbox.js") },
  demo: { summary: "play the demo scenarios against the sandbox and print what Steward did", load: () => import("./commands/demo.js") },
  sync: { summary: "sync Actions secrets and variables: steward sync --org ORG [--dry-run]", load: () => import("./commands/sync.js") },
  flakes: { summary: "flakiest jobs the rerun handler recorded: steward flakes --repo OWNER/NAME [--since 30d]", load: () => import("./commands/flakes.js") },
  simulate: { summary: "what a policy would have done with recorded decisions: steward simulate --policy FILE [--repo OWNER/NAME]", load: () => import("./commands/simulate.js") },
  receive: { summary: "run one payload through the handlers and print their outcomes: steward receive --event E --payload FILE", load: () => import("./commands/receive.js") },
  register: { summary: "register Steward as a GitHub App from app.yml (manifest flow) and write .env: steward register [--port P] [--org ORG]", load: () => import("./commands/register.js") },
  manifest: { summary: "print a least-privilege app manifest for the enabled handlers: steward manifest [--handlers rerun,deployments]", load: () => import("./commands/manifest.js") },
  deliveries: { summary: "inspect and replay stored deliveries (SQLite or Redis): list | show ID | replay ID | replay --status dead", load: () => import("./commands/deliveries.js") },
  backup: { summary: "copy the SQLite data directory consistently while the service runs: steward backup DEST", load: () => import("./commands/backup.js") },
};

function usage(): string {
  const lines = ["usage: steward <command> [options]", "       steward <command> --help", "       steward --version", "", "commands:"];
  for (const [name, c] of Object.entries(commands)) lines.push(`  ${name.padEnd(11)} ${c.summary}`);
  return lines.join("\n");
}

/** --help anywhere among a command's arguments (before a `--`). */
function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(usage() + "\n");
    return name ? 0 : 2;
  }
  if (name === "--version" || name === "-V" || name === "version") {
    process.stdout.write(`steward ${packageVersion()}\n`);
    return 0;
  }
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) {
    process.stderr.write(`steward: unknown command "${name}"\n\n${usage()}\n`);
    return 2;
  }
  const mod = await command.load();
  if (asksForHelp(rest)) {
    process.stdout.write(`${mod.usage.trimEnd()}\n`);
    return 0;
  }
  try {
    loadDotEnv(process.env, process.cwd());
  } catch (error) {
    if (!(error instanceof DotEnvError)) throw error;
    process.stderr.write(`steward: ${error.message}\n`);
    return 1;
  }
  try {
    return await mod.run(rest);
  } catch (error) {
    // A data directory of another schema: the message says what it is and what to do; a stack would not.
    if (!(error instanceof StoreSchemaError)) throw error;
    process.stderr.write(`steward: ${error.message}\n`);
    return 1;
  }
}
