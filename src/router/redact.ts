// Error text is stored and shown by `steward deliveries show`; tokens must not leak into it.
const patterns: RegExp[] = [
  // Classic 40-character tokens and the newer ~520-character `ghs_<app id>_<JWT>` (dots, dashes).
  /\bgh[pousr]_[A-Za-z0-9_.-]{8,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{8,}/g,
  /\b(bearer|token)\s+[A-Za-z0-9._~+/-]{8,}=*/gi,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g,
];

export function redactSecrets(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join("[redacted]");
  for (const p of patterns) out = out.replace(p, "[redacted]");
  return out;
}

export function errorText(e: unknown): string {
  if (e instanceof AggregateError && e.errors.length > 0) return e.errors.map(errorText).join("; ");
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}
