// Process-wide registry of secret values and the scrubber every log line and outward
// error message passes through. Values are registered where they enter the process
// (config load, installation tokens seen by the API client), so a secret that leaks into
// an unexpected place (an error message, a thrown object) is still masked.

const MASK = "[REDACTED]";
/** Shorter values would mask ordinary words; such secrets are too weak to matter anyway. */
const MIN_LENGTH = 4;
/** Installation tokens rotate hourly; keep the newest ones only, the token patterns catch the rest. */
const MAX_VALUES = 10_000;

// Credentials recognisable by shape, whether or not they were registered.
const PATTERNS: readonly RegExp[] = [
  // GitHub tokens: installation (ghs_), user, OAuth, refresh. Installation tokens are either
  // 40 characters or GitHub's newer ~520-character `ghs_<app id>_<JWT>` (underscores, dots, dashes).
  /\bgh[opsur]_[A-Za-z0-9_.-]{20,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g,
  /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+/g, // JWTs (app authentication)
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
  /\b((?:authorization|x-hub-signature(?:-256)?)"?\s*[:=]\s*"?)(?:(?:bearer|token|basic)\s+)?[^\s",}]+/gi,
];

const values = new Set<string>();
const listeners = new Set<(value: string) => void>();
let matcher: RegExp | undefined;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
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

/** Register a secret value: from now on it is masked in every log line and scrubbed message. */
export function registerSecret(value: string | undefined | null): void {
  if (typeof value !== "string") return;
  for (const listener of listeners) listener(value);
  let added = false;
  for (const form of formsOf(value)) {
    if (values.has(form)) continue;
    values.add(form);
    added = true;
  }
  if (!added) return;
  while (values.size > MAX_VALUES) values.delete(values.values().next().value as string);
  // Longest first so a value containing another is masked whole.
  const sorted = [...values].sort((a, b) => b.length - a.length);
  matcher = new RegExp(sorted.map(escapeRegExp).join("|"), "g");
}

/** Replace every registered secret and every credential-shaped string in `text`. */
export function scrub(text: string): string {
  let out = matcher ? text.replace(matcher, MASK) : text;
  for (const pattern of PATTERNS) {
    out = out.replace(pattern, (match: string, prefix?: unknown) =>
      typeof prefix === "string" ? prefix + MASK : MASK,
    );
  }
  return out;
}

/** Whether `text` contains a registered secret (Steward's own credentials and the tokens it holds). */
export function containsRegisteredSecret(text: string): boolean {
  if (!matcher) return false;
  matcher.lastIndex = 0;
  const found = matcher.test(text);
  matcher.lastIndex = 0;
  return found;
}

/** An Error's message, scrubbed: for answers and records that leave the process. */
export function safeErrorMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return scrub(message);
}

/** Test hook: forget registered values. */
export function clearSecretsForTests(): void {
  values.clear();
  matcher = undefined;
}

/** Test hook: be told of every registered value (the suite-wide leak guard collects them). */
export function onSecretRegistered(listener: (value: string) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
