// `steward run APP...`: Probot's `probot run ./app.js` habit. Hosts the given Probot apps or
// handler modules behind Steward's durable intake: the service of `steward start`, with these
// paths added to STEWARD_HANDLERS and the built-in handlers off (STEWARD_BUILTIN_HANDLERS, when
// set, decides instead). With no APP_ID it runs against the sandbox hub, installed with each app's
// own app.yml, and says so.
import { existsSync } from "node:fs";
import { resolve } from "node:path";

export const usage = `usage: steward run [--sandbox | --register] APP [APP...]
  hosts the Probot apps or handler modules at these paths (as \`probot run\` does), and only them:
  the built-in handlers stay off unless STEWARD_BUILTIN_HANDLERS names them (all, or e.g. rerun,checks).
  Configured from the environment as \`steward start\` (README.md "Configuration"); with no APP_ID
  it runs against the sandbox hub, where each app is installed with the events and permissions of
  its own app.yml (next to its entry file or at its package root). STEWARD_HANDLERS' paths are hosted too.
  With no APP_ID, at a terminal it asks whether to register the apps as a GitHub App first (GitHub's
  manifest flow from their own app.yml, as \`steward register\`; the credentials go to .env) or to run
  in the sandbox; --register and --sandbox answer in advance, and without a terminal it is the sandbox.`;

/** The environment `steward start` serves with for these arguments, or what is wrong with them. */
export function runEnvironment(args: string[], env: NodeJS.ProcessEnv): NodeJS.ProcessEnv | string {
  const paths: string[] = [];
  for (const a of args) {
    if (a.startsWith("-")) return `unknown option "${a}"`;
    if (a.includes(",")) return `"${a}": one path per argument (commas separate paths only in STEWARD_HANDLERS)`;
    if (!existsSync(resolve(a))) return `no such file: ${a} (${resolve(a)})`;
    paths.push(a);
  }
  if (paths.length === 0) return "name at least one app: steward run ./index.js";
  const listed = (env.STEWARD_HANDLERS ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "");
  return {
    ...env,
    STEWARD_HANDLERS: [...listed, ...paths].join(","),
    STEWARD_BUILTIN_HANDLERS: env.STEWARD_BUILTIN_HANDLERS?.trim() || "none",
  };
}

export async function run(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { firstRunFlags, serve } = await import("./start.js");
  const flags = firstRunFlags(argv);
  const served = typeof flags === "string" ? flags : runEnvironment(flags.rest, env);
  if (typeof served === "string" || typeof flags === "string") {
    process.stderr.write(`steward run: ${served}\n${usage}\n`);
    return 2;
  }
  return serve(served, { ...(flags.choice ? { choice: flags.choice } : {}), runApps: flags.rest });
}
