// `steward` command line. Each core command lives in its own module under ./commands and is
// imported lazily so `steward validate` does not pay for the server's start-up; the built-in
// handlers add their own commands (`HandlerModule.commands`), loaded only when one is asked for.

// Not `import pkg from "../../package.json"`: tsc would copy it into dist/, where package-root.ts
// would take that copy for the package root and miss app.yml.
import { packageVersion } from "../package-root.js";
import { DotEnvError, loadDotEnv } from "./dotenv.js";
import { StoreSchemaError } from "../store/sqlite/schema.js";
import { processIo, type CommandIo } from "./io.js";

/** A command: `usage` is printed for --help without running anything. */
type CommandModule = { usage: string; run(args: string[], io: CommandIo): Promise<number> };
type Command = { summary: string; load: () => Promise<CommandModule> };

/** A core command's module (under ./commands), which reads the environment it is given. */
const lazy =
  (load: () => Promise<{ usage: string; run(args: string[], env?: NodeJS.ProcessEnv): Promise<number> }>) =>
  async (): Promise<CommandModule> => {
    const mod = await load();
    return { usage: mod.usage, run: (args, io) => mod.run(args, io.env) };
  };

export const coreCommands: Record<string, Command> = {
  start: {
    summary: "run the service (with no APP_ID: against the sandbox hub)",
    load: lazy(() => import("./commands/start.js")),
  },
  run: {
    summary: "host Probot apps or handler modules, and only them (like probot run): steward run ./app.js [APP...]",
    load: lazy(() => import("./commands/run.js")),
  },
  new: {
    summary: "write a new app's package (app, app.yml, a sandbox test, .env.example): steward new DIR [--typescript]",
    load: lazy(() => import("./commands/new.js")),
  },
  validate: {
    summary: "check policy files: steward validate FILE...",
    load: lazy(() => import("./commands/validate.js")),
  },
  sandbox: {
    summary: "run the sandbox hub alone: steward sandbox [--port P] [--webhook-url URL]",
    load: lazy(() => import("./commands/sandbox.js")),
  },
  demo: {
    summary: "play the demo scenarios against the sandbox and print what Steward did",
    load: lazy(() => import("./commands/demo.js")),
  },
  simulate: {
    summary:
      "what a policy would have done with recorded decisions: steward simulate --policy FILE [--repo OWNER/NAME]",
    load: lazy(() => import("./commands/simulate.js")),
  },
  receive: {
    summary: "run one payload through the handlers and print their outcomes: steward receive --event E --payload FILE",
    load: lazy(() => import("./commands/receive.js")),
  },
  register: {
    summary:
      "register Steward as a GitHub App from app.yml (manifest flow) and write .env: steward register [--port P] [--org ORG]",
    load: lazy(() => import("./commands/register.js")),
  },
  manifest: {
    summary:
      "print a least-privilege app manifest for the enabled handlers: steward manifest [--handlers rerun,deployments]",
    load: lazy(() => import("./commands/manifest.js")),
  },
  deliveries: {
    summary:
      "inspect and replay stored deliveries (SQLite or Redis): list | show ID | replay ID | replay --status dead",
    load: lazy(() => import("./commands/deliveries.js")),
  },
  pause: {
    summary:
      "hold work for a handler, an installation or everything: steward pause [--handler H | --installation N] | status",
    load: lazy(() => import("./commands/pause.js")),
  },
  resume: {
    summary: "run what a pause held, in order: steward resume [--handler H | --installation N]",
    load: lazy(() => import("./commands/resume.js")),
  },
  backup: {
    summary: "copy the SQLite data directory consistently while the service runs: steward backup DEST",
    load: lazy(() => import("./commands/backup.js")),
  },
};

/** The core's commands, then the built-in handlers' (a handler cannot take a core command's name). */
export async function allCommands(): Promise<Record<string, Command>> {
  const { builtinHandlers } = await import("../../handlers/index.js");
  const commands: Record<string, Command> = { ...coreCommands };
  for (const h of builtinHandlers) {
    for (const c of h.commands ?? []) {
      if (Object.hasOwn(commands, c.name)) throw new Error(`handler ${h.name}: command "${c.name}" is taken`);
      const run = async (args: string[], io: CommandIo) =>
        c.run(args, (await import("./context.js")).commandContext(c.name, io));
      commands[c.name] = { summary: c.summary, load: async () => ({ usage: c.usage, run }) };
    }
  }
  return commands;
}

async function usage(): Promise<string> {
  const lines = [
    "usage: steward <command> [options]",
    "       steward <command> --help",
    "       steward --version",
    "",
    "commands:",
  ];
  for (const [name, c] of Object.entries(await allCommands())) lines.push(`  ${name.padEnd(11)} ${c.summary}`);
  return lines.join("\n");
}

/** --help anywhere among a command's arguments (before a `--`). */
function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

async function handlerCommand(name: string): Promise<Command | undefined> {
  const commands = await allCommands();
  return Object.hasOwn(commands, name) ? commands[name] : undefined;
}

/** Runs `steward ARGV...`; `io` (tests) replaces the process's environment and output. */
export async function main(argv: string[], io: CommandIo = processIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    io.out((await usage()) + "\n");
    return name ? 0 : 2;
  }
  if (name === "--version" || name === "-V" || name === "version") {
    io.out(`steward ${packageVersion()}\n`);
    return 0;
  }
  const command = Object.hasOwn(coreCommands, name) ? coreCommands[name] : await handlerCommand(name);
  if (!command) {
    io.err(`steward: unknown command "${name}"\n\n${await usage()}\n`);
    return 2;
  }
  const mod = await command.load();
  if (asksForHelp(rest)) {
    io.out(`${mod.usage.trimEnd()}\n`);
    return 0;
  }
  try {
    loadDotEnv(io.env, process.cwd());
  } catch (error) {
    if (!(error instanceof DotEnvError)) throw error;
    io.err(`steward: ${error.message}\n`);
    return 1;
  }
  try {
    return await mod.run(rest, io);
  } catch (error) {
    // A data directory of another schema: the message says what it is and what to do; a stack would not.
    if (!(error instanceof StoreSchemaError)) throw error;
    io.err(`steward: ${error.message}\n`);
    return 1;
  }
}
