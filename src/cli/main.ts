// `steward` command line. Each command lives in its own module under ./commands and
// is imported lazily so `steward validate` does not pay for the server's start-up.

type Command = { summary: string; load: () => Promise<{ run(args: string[]): Promise<number> }> };

const commands: Record<string, Command> = {
  start: { summary: "run the service (with no APP_ID: against the sandbox hub)", load: () => import("./commands/start.js") },
  validate: { summary: "check policy files: steward validate FILE...", load: () => import("./commands/validate.js") },
  sandbox: { summary: "run the sandbox hub alone: steward sandbox [--port P] [--webhook-url URL]", load: () => import("./commands/sandbox.js") },
  demo: { summary: "play the demo scenarios against the sandbox and print what Steward did", load: () => import("./commands/demo.js") },
  sync: { summary: "sync Actions secrets and variables: steward sync --org ORG [--dry-run]", load: () => import("./commands/sync.js") },
  flakes: { summary: "flakiest jobs the rerun handler recorded: steward flakes --repo OWNER/NAME [--since 30d]", load: () => import("./commands/flakes.js") },
  simulate: { summary: "what a policy would have done with recorded decisions: steward simulate --policy FILE [--repo OWNER/NAME]", load: () => import("./commands/simulate.js") },
  deliveries: { summary: "inspect stored deliveries: list | show ID | replay ID", load: () => import("./commands/deliveries.js") },
};

function usage(): string {
  const lines = ["usage: steward <command> [options]", "", "commands:"];
  for (const [name, c] of Object.entries(commands)) lines.push(`  ${name.padEnd(11)} ${c.summary}`);
  return lines.join("\n");
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(usage() + "\n");
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`steward: unknown command "${name}"\n\n${usage()}\n`);
    return 2;
  }
  const mod = await command.load();
  return mod.run(rest);
}
