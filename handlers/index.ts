// The built-in handler modules, one per capability. Extra modules load from STEWARD_HANDLERS.
import type { HandlerModule } from "../src/index.js";
import rerun from "./rerun/index.js";
import deployments from "./deployments/index.js";
import checks from "./checks/index.js";
import secrets from "./secrets/index.js";

export const builtinHandlers: readonly HandlerModule<any>[] = [rerun, deployments, checks, secrets];
