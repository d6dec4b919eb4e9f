// `steward pause` and `steward resume`: hold work for one handler, one installation or everything,
// in the service's own store (every replica, and across restarts), and say what is paused.
import { userInfo } from "node:os";
import { loadStoreSettings } from "../../config/env.js";
import { openOperatorStore, storeLocation } from "../operator-store.js";
import { describeScope, listPauses, pause, resume, scopeOf, type Pause } from "../../engine/pauses.js";

export const usage = `usage: steward pause [--handler H | --installation N]
       steward resume [--handler H | --installation N]
       steward pause status
  With neither flag: everything. While paused, deliveries are recorded and answered 202 as ever;
  nothing they or a handler's tasks would run runs until resumed, then the backlog runs in order.
  Uses the service's store (STEWARD_POSTGRES_URL, STEWARD_REDIS_URL, else STEWARD_DATA_DIR); a running
  service sees a change within a second.`;

function parseFlags(args: string[]): { handler?: string; installation?: string; positional: string[] } {
  const out: { handler?: string; installation?: string; positional: string[] } = { positional: [] };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [name, inline] = arg.startsWith("--") ? (arg.slice(2).split(/=(.*)/s, 2) as [string, string?]) : [];
    if (name === "handler" || name === "installation") {
      const value = inline ?? args[++i];
      if (value === undefined) throw new Error(`--${name} needs a value`);
      out[name] = value;
    } else if (name !== undefined) throw new Error(`unknown option ${arg}`);
    else out.positional.push(arg);
  }
  return out;
}

function line(p: Pause): string {
  return `paused: ${describeScope(p.scope)} (by ${p.by}, since ${p.at})`;
}

/** `verb` is "pause" or "resume" (bin/steward routes both here). */
export async function runVerb(verb: "pause" | "resume", args: string[], env: NodeJS.ProcessEnv = process.env) {
  let parsed: ReturnType<typeof parseFlags>;
  let settings: ReturnType<typeof loadStoreSettings>;
  try {
    parsed = parseFlags(args);
    settings = loadStoreSettings(env);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${usage}\n`);
    return 2;
  }
  const status = verb === "pause" && parsed.positional[0] === "status";
  if (parsed.positional.length > (status ? 1 : 0)) {
    process.stderr.write(`unexpected ${parsed.positional.join(" ")}\n${usage}\n`);
    return 2;
  }
  let scope;
  try {
    scope = scopeOf(parsed.handler, parsed.installation);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${usage}\n`);
    return 2;
  }
  const store = await openOperatorStore(settings);
  if (!store) return 1;
  try {
    const by = `cli:${userInfo().username}`;
    if (!status) {
      const changed = verb === "pause" ? await pause(store.kv, scope, by) : await resume(store.kv, scope, by);
      const what = describeScope(scope);
      process.stdout.write(
        verb === "pause"
          ? changed
            ? `paused ${what}\n`
            : `${what} was paused already\n`
          : changed
            ? `resumed ${what}\n`
            : `${what} was not paused\n`,
      );
    }
    const pauses = await listPauses(store.kv);
    process.stdout.write(
      pauses.length ? pauses.map(line).join("\n") + "\n" : `nothing is paused (${storeLocation(settings, store)})\n`,
    );
    return 0;
  } finally {
    await store.close();
  }
}

export const run = (args: string[], env?: NodeJS.ProcessEnv) => runVerb("pause", args, env);
