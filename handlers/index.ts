// The built-in handler modules, one per capability. Extra modules load from STEWARD_HANDLERS.
import { policyModules, type HandlerModule } from "../src/index.js";
import rerun from "./rerun/index.js";
import deployments from "./deployments/index.js";
import { createChecksHandler } from "./checks/index.js";
import secrets from "./secrets/index.js";

/** The steward/config check, validating what the service loads: these modules and STEWARD_HANDLERS'. */
export const checks = createChecksHandler({ handlers: (ctx) => policyHandlers(ctx.config.handlerPaths ?? []) });

export const builtinHandlers: readonly HandlerModule<any>[] = [rerun, deployments, checks, secrets];

/** The modules whose sections and documents make up Steward's policy: the built-in ones plus those at `extraPaths`. */
export async function policyHandlers(extraPaths: readonly string[] = []): Promise<readonly HandlerModule<any>[]> {
  return [...builtinHandlers, ...(await policyModules(extraPaths))];
}
