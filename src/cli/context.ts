// What a handler's command (`HandlerModule.commands`) runs with: its input and output, and the
// service's configuration, logger, GitHub clients and store, opened as the service opens them,
// so a command and the service never disagree.
import pino from "pino";
import type { CommandContext } from "../handler.js";
import { createOctokitFactory } from "../api/client.js";
import { inProcessCoordination } from "../coordination/in-process.js";
import { ConfigError, loadConfig } from "../config/env.js";
import { createLogger } from "../log/logger.js";
import { openOperatorStore } from "./operator-store.js";
import type { CommandIo } from "./io.js";

/** Ctrl-C or SIGTERM stop the command between steps; a second one exits at once. */
function interruptSignal(command: string, err: (text: string) => void): AbortSignal {
  const stop = new AbortController();
  const onSignal = () => {
    if (stop.signal.aborted) process.exit(130);
    err(`\nsteward ${command}: stopping between steps (again to exit at once)\n`);
    stop.abort(new Error("interrupted"));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return stop.signal;
}

export function commandContext(command: string, io: CommandIo): CommandContext {
  let interrupt = io.signal;
  return {
    env: io.env,
    out: io.out,
    err: io.err,
    errIsTty: io.errIsTty === true,
    interrupted: () => (interrupt ??= interruptSignal(command, io.err)),
    loadConfig() {
      try {
        return { config: loadConfig(io.env) };
      } catch (e) {
        if (e instanceof ConfigError) return { problem: e.message };
        throw e;
      }
    },
    // The command's own output is its report: the log keeps warnings and worse, on stderr.
    logger: (config) =>
      createLogger({
        level: config.logLevel === "info" ? "warn" : config.logLevel,
        format: config.logFormat,
        destination: pino.destination({ dest: 2, sync: true }),
      }),
    github: (config, logger) =>
      createOctokitFactory({
        config,
        logger,
        coordination: inProcessCoordination(),
        ...(config.writeIntervalMs !== undefined ? { writeIntervalMs: config.writeIntervalMs } : {}),
      }),
    async openStore(settings, opts = {}) {
      const store = await openOperatorStore(settings, opts);
      return store && { kv: store.kv, close: () => store.close() };
    },
  };
}
