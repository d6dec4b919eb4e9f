// At start, in the background: does GitHub accept the app's credential? `GET /app` with the
// app's JWT answers that alone. A rejection is reported once, naming the settings to fix and
// GitHub's answer, instead of surfacing later as some handler's failure.
import type { Logger } from "pino";
import type { OctokitFactory } from "../api/types.js";
import { safeErrorMessage } from "../log/redact.js";
import { retryUntilDone, type Backoff } from "./backoff.js";
import { runWithSignal } from "./abort-scope.js";

export type CredentialState = "checking" | "accepted" | "rejected" | "unreachable";

function statusOf(error: unknown): number | undefined {
  const s = (error as { status?: unknown })?.status;
  return typeof s === "number" ? s : undefined;
}

function answerOf(error: unknown): string {
  const data = (error as { response?: { data?: { message?: unknown } } })?.response?.data;
  const message = typeof data?.message === "string" ? data.message : safeErrorMessage(error);
  return `${statusOf(error) ?? "no answer"} ${JSON.stringify(message.slice(0, 200))}`;
}

export function checkAppCredential(opts: {
  octokits: OctokitFactory;
  appId: number | string;
  apiUrl: string;
  logger: Logger;
  signal: AbortSignal;
  backoff?: Backoff;
  observe?(state: CredentialState): void;
  /** GitHub's count of the app's installations, from the same answer. */
  installations?(count: number): void;
}): Promise<boolean> {
  const log = opts.logger.child({ component: "credentials" });
  let reported = false;
  opts.observe?.("checking");
  return runWithSignal(opts.signal, () =>
    retryUntilDone({
      signal: opts.signal,
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      run: async () => {
        const app = await opts.octokits.appOctokit();
        const { data } = await app.request("GET /app");
        opts.observe?.("accepted");
        const count = (data as { installations_count?: unknown } | null)?.installations_count;
        if (typeof count === "number") opts.installations?.(count);
        if (reported) log.info("GitHub accepts the app credential now");
      },
      onFailure: (error, attempt, retryInMs) => {
        const status = statusOf(error);
        if (status === 401) {
          opts.observe?.("rejected");
          if (reported) return;
          reported = true;
          log.error(
            { answer: answerOf(error), appId: String(opts.appId) },
            `GitHub rejected the app credential: GET /app answered ${answerOf(error)}. ` +
              `Check APP_ID (${opts.appId}) and PRIVATE_KEY / PRIVATE_KEY_PATH: the key must be a current private key of that app ` +
              `(and this machine's clock right). Deliveries are still recorded; work that needs the API waits.`,
          );
          return;
        }
        opts.observe?.("unreachable");
        // A connection that failed has no response (Octokit still gives it status 500).
        const answered = (error as { response?: unknown })?.response !== undefined;
        const what = answered ? `GET /app answered ${answerOf(error)}` : "GitHub API not reachable yet";
        log.warn(
          { attempt, retryInMs, apiUrl: opts.apiUrl, answer: answerOf(error) },
          `${what}; retrying in the background`,
        );
      },
    }),
  );
}

/**
 * After start, `GET /app` now and then: a key revoked or rotated while the service runs shows as
 * rejected (and the installations count stays current) without waiting for a handler to fail.
 * Throws what GitHub answered, for the periodic runner to log.
 */
export async function recheckAppCredential(opts: {
  octokits: OctokitFactory;
  signal: AbortSignal;
  observe(state: CredentialState): void;
  installations(count: number): void;
}): Promise<void> {
  const app = await opts.octokits.appOctokit();
  try {
    const { data } = await app.request("GET /app", { request: { signal: opts.signal } });
    opts.observe("accepted");
    const count = (data as { installations_count?: unknown } | null)?.installations_count;
    if (typeof count === "number") opts.installations(count);
  } catch (error) {
    if (!opts.signal.aborted) opts.observe(statusOf(error) === 401 ? "rejected" : "unreachable");
    throw error;
  }
}
