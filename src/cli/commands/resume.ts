// `steward resume`: see pause.ts.
import { runVerb, usage as pauseUsage } from "./pause.js";

/** The same text as pause's, led by resume's own line (what `steward resume --help` prints first). */
export const usage = `usage: steward resume [--handler H | --installation N]\n${pauseUsage.replace(/^usage: /, "       ")}`;
export const run = (args: string[], env?: NodeJS.ProcessEnv) => runVerb("resume", args, env);
