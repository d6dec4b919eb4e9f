// The assertion every stop test makes: the work failed with the stop's error (an AbortError,
// isStopped) that names the reason the stop was given.
import { expect } from "vitest";
import { isStopped } from "../../src/lifecycle/abort-scope.js";

export async function expectStoppedWith(pending: Promise<unknown>, reason: string): Promise<void> {
  const error = await pending.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isStopped(error)).toBe(true);
  expect(String(error)).toContain(reason);
}
