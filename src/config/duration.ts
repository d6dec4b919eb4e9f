// The one way Steward reads a duration, in settings (STEWARD_*) and in policy files alike.
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30s`, `5m`, `1h`, `2d`, `250ms`, or a number of seconds. Returns undefined when unparsable. */
export function parseDuration(spec: string | number): number | undefined {
  if (typeof spec === "number") return Number.isFinite(spec) && spec >= 0 ? spec * 1000 : undefined;
  const m = DURATION.exec(spec.trim());
  if (!m) return undefined;
  return Math.round(Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]);
}
