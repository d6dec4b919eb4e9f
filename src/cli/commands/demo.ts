// `npm run demo`: start the sandbox stack (hub + Steward), play the demo scenarios and
// print what Steward did, then exit. `--into URL` plays into a sandbox already running in another
// process (`steward start` with no APP_ID) through its hub's control surface, so that process's
// console and store show what happened.
import { pino } from "pino";
import { playDemoInto, runDemo } from "../../sandbox/demo/index.js";
import { remoteTarget } from "../../sandbox/demo/target.js";
import { startSandboxStack } from "../../sandbox/stack.js";

export const usage = `usage: steward demo [--into URL]
  starts the sandbox hub and Steward in this process (no credentials needed), plays the demo
  scenarios, prints what Steward did, and exits.
  --into URL plays into a sandbox already running (steward start with no APP_ID): URL is its hub,
  or the control surface the banner prints (http://127.0.0.1:3001/_sandbox/); its console then
  shows the deliveries. Only the scenarios that drive the hub through its control surface alone
  play there (deliveries, rerun, deployments, steward/config); the others are named as not played`;

function parseArgs(args: string[]): { into?: string } | string {
  const out: { into?: string } = {};
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag !== "--into") return `unexpected argument "${args[i]}"`;
    const value = inline ?? args[++i];
    if (!value || !/^https?:\/\//.test(value)) return "--into needs the sandbox hub's URL (http://...)";
    out.into = value;
  }
  return out;
}

export async function run(args: string[]): Promise<number> {
  const parsed = parseArgs(args);
  if (typeof parsed === "string") {
    process.stderr.write(`steward demo: ${parsed}\n${usage}\n`);
    return 2;
  }
  const print = (line: string) => process.stdout.write(`${line}\n`);
  if (parsed.into) return playInto(parsed.into, print);
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

async function playInto(url: string, print: (line: string) => void): Promise<number> {
  let target;
  try {
    target = await remoteTarget(url);
  } catch (e) {
    process.stderr.write(`steward demo: ${(e as Error).message}\n`);
    return 1;
  }
  print(`Steward demo: playing into the running sandbox: hub ${target.hubUrl}, Steward ${target.stewardUrl}`);
  const { failed, notPlayed } = await playDemoInto(target, print);
  print("");
  if (notPlayed.length)
    print(
      `not played into a running sandbox (they need Steward's own process: its environment or store; \`steward demo\` alone plays them): ${notPlayed.join("; ")}`,
    );
  print(failed.length ? `done; ${failed.length} scenario(s) could not run: ${failed.join(", ")}` : "done");
  print(`see them in its console: ${target.stewardUrl}/console`);
  return failed.length ? 1 : 0;
}
