// GitHub's own answer "not now": an API call refused by the primary rate limit (remaining 0,
// with the reset time) or by a secondary limit (`retry-after`). A handler run that fails on it
// did nothing wrong; its retry waits for the time GitHub gave instead of backing off into the
// same wall and running out of attempts.

interface LimitError {
  status?: unknown;
  response?: { headers?: Record<string, unknown> };
}

const header = (h: Record<string, unknown> | undefined, name: string): string | undefined => {
  const v = h?.[name];
  return typeof v === "string" ? v : typeof v === "number" ? String(v) : undefined;
};

/** When GitHub said the call may be made again, if `error` is a rate-limit refusal. */
export function rateLimitedUntil(error: unknown, now: Date = new Date()): Date | undefined {
  const e = error as LimitError | null;
  if (!e || (e.status !== 403 && e.status !== 429)) return undefined;
  const headers = e.response?.headers;
  const retryAfter = Number(header(headers, "retry-after"));
  if (Number.isFinite(retryAfter) && retryAfter >= 0) return new Date(now.getTime() + retryAfter * 1000);
  const reset = Number(header(headers, "x-ratelimit-reset"));
  if (header(headers, "x-ratelimit-remaining") === "0" && Number.isFinite(reset) && reset > 0)
    return new Date(Math.max(now.getTime(), reset * 1000));
  return undefined;
}

/** "12:34 UTC" (with the date when it is not today's). */
export function clockTime(at: Date, now: Date = new Date()): string {
  const iso = at.toISOString();
  const time = `${iso.slice(11, 16)} UTC`;
  return iso.slice(0, 10) === now.toISOString().slice(0, 10) ? time : `${iso.slice(0, 10)} ${time}`;
}
