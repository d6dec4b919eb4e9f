// Shared by the lifecycle tests: a port nothing listens on, and waiting for a condition with
// the process output in the error when it never comes (no timing assertions).
import { createServer } from "node:net";

/** A port free a moment ago: nothing listens on it (connections are refused) until someone binds it. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Polls `check` (up to a minute); the error shows the tail of `output`. */
export async function until(check: () => boolean, what: string, output: () => string, stepMs = 50): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  throw new Error(`timed out waiting for ${what}\n${output().slice(-4000)}`);
}
