// Steward's logger: pino JSON (or pino-pretty for people), and every line passes through
// `scrub` so registered secrets and credential-shaped strings never reach the output,
// wherever they were put (message, object, error, stack).
import { pino, type DestinationStream, type Logger } from "pino";
import { createRequire } from "node:module";
import type { PrettyOptions } from "pino-pretty";
import { scrub } from "./redact.js";
import { maskSecretKeys } from "./mask-keys.js";
import { traceFields } from "./trace.js";

export type { Logger } from "pino";

export interface LoggerOptions {
  level: string;
  format: "json" | "pretty";
  /** Where lines go (default stdout). Tests pass a collecting stream. */
  destination?: DestinationStream | NodeJS.WritableStream;
}

/** pino-pretty, required only when a logger is pretty: a service logging JSON never loads it. */
function prettyStream(options: PrettyOptions): DestinationStream {
  const pretty = createRequire(import.meta.url)("pino-pretty") as (o: PrettyOptions) => DestinationStream;
  return pretty(options);
}

const errSerializer = (e: unknown) => maskSecretKeys(pino.stdSerializers.err(e as Error));

export function createLogger(opts: LoggerOptions): Logger {
  const base = opts.destination ?? pino.destination({ dest: 1, sync: true });
  const destination =
    opts.format === "pretty"
      ? prettyStream({ destination: base as NodeJS.WritableStream, colorize: false, sync: true })
      : base;
  const logger = pino(
    {
      level: opts.level,
      base: { name: "steward" },
      // Credential-named keys are masked at any depth in logged objects, serialized errors and
      // child bindings; `scrub` then catches secret values under any other name.
      formatters: { log: (object) => maskSecretKeys(object) },
      hooks: { streamWrite: (line) => scrub(line) },
      serializers: { err: errSerializer, error: errSerializer },
      // The trace and span a line was logged in (none while traces are not exported).
      mixin: traceFields,
    },
    destination as DestinationStream,
  );
  // pino applies no formatter to child bindings; children inherit this `child` from the root.
  const child = logger.child;
  logger.child = function (this: Logger, bindings, options) {
    return child.call(this, maskSecretKeys(bindings), options);
  } as typeof logger.child;
  return logger;
}
