// Steward's logger: pino JSON (or pino-pretty for people), and every line passes through
// `scrub` so registered secrets and credential-shaped strings never reach the output,
// wherever they were put (message, object, error, stack).
import { pino, type DestinationStream, type Logger } from "pino";
import pretty from "pino-pretty";
import { scrub } from "./redact.js";

export type { Logger } from "pino";

export interface LoggerOptions {
  level: string;
  format: "json" | "pretty";
  /** Where lines go (default stdout). Tests pass a collecting stream. */
  destination?: DestinationStream | NodeJS.WritableStream;
}

// Keys whose values are credentials wherever they appear in a logged object. pino's
// redact masks by path; the scrubber catches values under any other name.
const SECRET_KEYS = [
  "authorization",
  "Authorization",
  "token",
  "privateKey",
  "private_key",
  "secret",
  "secrets",
  "webhookSecret",
  "webhookSecrets",
  "reviewerToken",
  "password",
  "jwt",
];
const REDACT_PATHS = SECRET_KEYS.flatMap((key) => [
  key,
  `*.${key}`,
  `*.*.${key}`,
  `headers.${key}`,
  `*.headers.${key}`,
  `request.headers.${key}`,
  `*.request.headers.${key}`,
]);

export function createLogger(opts: LoggerOptions): Logger {
  const base = opts.destination ?? pino.destination({ dest: 1, sync: true });
  const destination =
    opts.format === "pretty"
      ? pretty({ destination: base as NodeJS.WritableStream, colorize: false, sync: true })
      : base;
  return pino(
    {
      level: opts.level,
      base: { name: "steward" },
      redact: { paths: REDACT_PATHS, censor: "[REDACTED]" },
      hooks: { streamWrite: (line) => scrub(line) },
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
    },
    destination as DestinationStream,
  );
}
