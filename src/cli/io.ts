// Where a command reads its environment and writes its output: the process, or what a test hands in.

/** A command's input and output; tests hand in their own. */
export interface CommandIo {
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
  /** Whether `err` is a terminal. */
  errIsTty?: boolean;
  /** Stops long work between steps (default: the first Ctrl-C or SIGTERM, once a command asks). */
  signal?: AbortSignal;
}

export const processIo = (): CommandIo => ({
  env: process.env,
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  errIsTty: process.stderr.isTTY === true,
});
