// What a test of a running Steward starts (the sandbox hub, a scratch data directory, Steward
// itself, a child process...), stopped after the test in the reverse order it was started, whether
// the test passed or not: Steward closes before its data directory goes, the hub last.
import { afterEach } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSteward, type CreateStewardOptions, type Steward } from "../../src/app.js";
import { createHub, type CreateHubOptions, type HubHandle } from "../../src/sandbox/hub.js";

export interface PerTest {
  hub(opts?: CreateHubOptions): Promise<HubHandle>;
  /** A new scratch directory named `steward-<name>-...`, removed after the test. */
  dataDir(name: string): Promise<string>;
  /** Steward started with `opts`, closed after the test (closing it earlier too is harmless). */
  steward(opts: CreateStewardOptions): Promise<Steward>;
  /** Anything else the test started: `stop(value)` runs after the test; gives `value` back. */
  stopAfter<T>(value: T, stop: (value: T) => unknown): T;
}

/** Call at the top of a test file: registers the `afterEach` that stops what each test started. */
export function perTest(): PerTest {
  const stops: (() => unknown)[] = [];
  afterEach(async () => {
    const failures: unknown[] = [];
    for (let stop = stops.pop(); stop; stop = stops.pop())
      await Promise.resolve()
        .then(stop)
        .catch((err: unknown) => failures.push(err));
    if (failures.length > 0) throw failures[0];
  });
  const started = <T>(value: T, stop: (value: T) => unknown): T => {
    stops.push(() => stop(value));
    return value;
  };
  return {
    hub: async (opts) => started(await createHub(opts), (h) => h.close()),
    dataDir: async (name) =>
      started(await mkdtemp(join(tmpdir(), `steward-${name}-`)), (d) => rm(d, { recursive: true, force: true })),
    steward: async (opts) => started(await createSteward(opts), (s) => s.close()),
    stopAfter: started,
  };
}
