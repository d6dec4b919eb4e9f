// `steward resume`: see pause.ts.
import { runVerb, usage } from "./pause.js";

export { usage };
export const run = (args: string[], env?: NodeJS.ProcessEnv) => runVerb("resume", args, env);
