// `npm run demo`: start the sandbox stack (hub + Steward), play the demo scenarios and
// print what Steward did, then exit.
import { pino } from "pino";
import { runDemo } from "../../sandbox/demo/index.js";
import { startSandboxStack } from "../../sandbox/stack.js";

export const usage = `usage: steward demo
  starts the sandbox hub and Steward in this process (no credentials needed), plays the demo
  scenarios, prints what Steward did, and exits`;

export async function run(args: string[]): Promise<number> {
  if (args.length > 0) {
    process.stderr.write(`steward demo: unexpected argument "${args[0]}"\n${usage}\n`);
    return 2;
  }
  const print = (line: string) => process.stdout.write(`${line}\n`);
  print("Steward demo: playing scenarios against the sandbox hub (no GitHub credentials needed)");
  const stack = await startSandboxStack({ logger: pino({ level: "warn" }), env: { LOG_LEVEL: "warn" } });
  try {
    print(`hub ${stack.hub.url}, Steward receiving webhooks at ${stack.webhookUrl}`);
    const { failed } = await runDemo(stack, print);
    print("");
    print(failed.length ? `done; ${failed.length} scenario(s) could not run: ${failed.join(", ")}` : "done");
    return 0;
  } finally {
    await stack.close();
  }
}
