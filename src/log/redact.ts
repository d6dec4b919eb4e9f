// Process-wide registry of secret values and the one scrubber every log line, stored failure
// and outward error message passes through. Values are registered where they enter the process
// (config load, installation tokens seen by the API client), so a secret that leaks into an
// unexpected place (an error message, a thrown object) is still masked.

/** What every masked value becomes, in log lines, stored errors and answers alike. */
export const MASK = "[REDACTED]";
/** Shorter values would mask ordinary words; such secrets are too weak to matter anyway. */
const MIN_LENGTH = 4;
/**
 * Installation tokens rotate hourly, one per installation: each is masked by value for two hours
 * after it was first seen (its whole life and then some), and at most the newest 10,000 are; the
 * token patterns catch GitHub's after that. Every registered value makes each log line's scrub
 * longer (25 µs a line with 10,000 of them, 2-4 µs with a few hundred), so dead tokens go. The
 * configuration's secrets are never let go: a webhook secret has no shape a pattern could
 * catch, and it was registered before every token.
 */
export const MAX_ROTATING_VALUES = 10_000;
export const ROTATING_KEEP_MS = 2 * 3_600_000;

// Credentials recognisable by shape, whether or not they were registered. A pattern whose first
// group is a label (a header name, "bearer") keeps the label and masks what follows it.
const PATTERNS: readonly RegExp[] = [
  // GitHub tokens: personal (ghp_), installation (ghs_), OAuth (gho_), user-to-server (ghu_),
  // refresh (ghr_). Installation tokens are either 40 characters or GitHub's newer
  // ~520-character `ghs_<app id>_<JWT>` (underscores, dots, dashes).
  /\bgh[opsur]_[A-Za-z0-9_.-]{8,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{8,}/g,
  /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+/g, // JWTs (app authentication)
  // A private key, also when cut short (an error message that quotes the start of a file).
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  /\b((?:authorization|x-hub-signature(?:-256)?)"?\s*[:=]\s*"?)(?:(?:bearer|token|basic)\s+)?[^\s",}]+/gi,
  // A credential after "bearer" or "token" in prose ("401 for token 1a2b3c4d..."): it has a digit,
  // so "token refreshed" stays readable.
  /\b((?:bearer|token)\s+)(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{8,}=*/gi,
];

/** The configuration's secrets (a handful), kept for the process's life. */
const pinned = new Set<string>();
/** Installation tokens' forms, oldest first, with when each was first seen. */
const rotating = new Map<string, number>();
const listeners = new Set<(value: string) => void>();
/** Every registered form as one pattern, rebuilt when next needed after a registration. */
let matcher: RegExp | undefined;
let matcherStale = false;

function registered(): RegExp | undefined {
  if (matcherStale) {
    matcher = matcherOf([...pinned, ...rotating.keys()]);
    matcherStale = false;
  }
  return matcher;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** One alternation of `forms`, longest first so a value containing another is masked whole. */
function matcherOf(forms: Iterable<string>): RegExp | undefined {
  const sorted = [...forms].sort((a, b) => b.length - a.length);
  return sorted.length === 0 ? undefined : new RegExp(sorted.map(escapeRegExp).join("|"), "g");
}

/** The forms a value takes inside text: as is, JSON-escaped (log lines), and a PEM's body lines. */
function formsOf(value: string): string[] {
  const forms = new Set<string>([value, JSON.stringify(value).slice(1, -1)]);
  if (value.includes("-----BEGIN")) {
    for (const line of value.split(/\r?\n/)) {
      const body = line.trim();
      if (body.length >= 16 && !body.startsWith("-----")) forms.add(body);
    }
  }
  return [...forms].filter((f) => f.length >= MIN_LENGTH);
}

/**
 * Register a secret value: from now on it is masked in every log line and scrubbed message.
 * `rotating`: a credential replaced every so often (an installation token), kept ROTATING_KEEP_MS
 * after it was first seen and among the newest MAX_ROTATING_VALUES; anything else is kept for as
 * long as the process runs.
 */
export function registerSecret(value: string | undefined | null, opts: { rotating?: boolean } = {}): void {
  if (typeof value !== "string") return;
  // Seen before (the API client registers the token of every request it sends): nothing to do.
  if (pinned.has(value) || (opts.rotating && rotating.has(value))) return;
  for (const listener of listeners) listener(value);
  const now = Date.now();
  let changed = false;
  for (const form of formsOf(value)) {
    if (pinned.has(form)) continue;
    if (opts.rotating) {
      if (rotating.has(form)) continue;
      rotating.set(form, now);
    } else {
      rotating.delete(form);
      pinned.add(form);
    }
    changed = true;
  }
  // The oldest first: insertion order is the order they were first seen.
  for (const [form, seen] of rotating) {
    if (rotating.size <= MAX_ROTATING_VALUES && now - seen < ROTATING_KEEP_MS) break;
    rotating.delete(form);
    changed = true;
  }
  if (changed) matcherStale = true;
}

/**
 * Replace every registered secret, every value of `secrets` (e.g. a configuration's own, where
 * it was not loaded from the environment) and every credential-shaped string in `text`.
 */
export function scrub(text: string, secrets: readonly string[] = []): string {
  const given = secrets.length === 0 ? undefined : matcherOf(secrets.flatMap(formsOf));
  let out = given ? text.replace(given, MASK) : text;
  const known = registered();
  if (known) out = out.replace(known, MASK);
  for (const pattern of PATTERNS) {
    out = out.replace(pattern, (match: string, prefix?: unknown) =>
      typeof prefix === "string" ? prefix + MASK : MASK,
    );
  }
  return out;
}

/** Whether `text` contains a registered secret (Steward's own credentials and the tokens it holds). */
export function containsRegisteredSecret(text: string): boolean {
  const known = registered();
  if (!known) return false;
  known.lastIndex = 0;
  const found = known.test(text);
  known.lastIndex = 0;
  return found;
}

/** What went wrong, unscrubbed: an Error's message (or name), each of an AggregateError's errors. */
export function errorText(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.map(errorText).join("; ");
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

/** An error's text, scrubbed: for answers and records that leave the process. */
export function safeErrorMessage(error: unknown, secrets: readonly string[] = []): string {
  return scrub(errorText(error), secrets);
}

/** Test hook: forget registered values. */
export function clearSecretsForTests(): void {
  pinned.clear();
  rotating.clear();
  matcher = undefined;
  matcherStale = false;
}

/** Test hook: be told of every registered value (the suite-wide leak guard collects them). */
export function onSecretRegistered(listener: (value: string) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
