// The console tests' world: the sandbox stack with one extra handler that refuses, for good,
// a push whose commit message says "break" (its delivery becomes a dead letter), counting runs.
import type { Logger } from "pino";
import { defineHandler } from "../../src/handler.js";
import { startSandboxStack, type SandboxStack } from "../../src/sandbox/stack.js";
import { builtinHandlers } from "../../handlers/index.js";

export interface ConsoleWorld {
  stack: SandboxStack;
  base: string;
  /** Runs of the refusing handler so far (a replay runs it again). */
  pushRuns(): number;
  settle(): Promise<void>;
}

export async function consoleWorld(opts: { logger?: Logger } = {}): Promise<ConsoleWorld> {
  let runs = 0;
  const picky = defineHandler<unknown>({
    name: "picky",
    events: ["push"],
    async handle(ctx) {
      runs++;
      const message = String((ctx.payload as { head_commit?: { message?: string } }).head_commit?.message ?? "");
      if (message.includes("break"))
        return { status: "failed", error: `refused commit "${message}"`, retryable: false };
      return { status: "done", summary: `accepted commit "${message}" because it does not say break` };
    },
  });
  const stack = await startSandboxStack({
    handlers: [...builtinHandlers, picky],
    env: { STEWARD_MAX_ATTEMPTS: "1" },
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  return {
    stack,
    base: stack.steward.url,
    pushRuns: () => runs,
    async settle() {
      await stack.hub.control.settled();
      await stack.steward.engine.idle();
    },
  };
}
