// Effects log shared by the domain modules: what clients made the hub do (reruns requested,
// secrets written, reviews recorded...), so tests and the demo can judge a handler by its effects.

export interface Effect {
  at: string;
  domain: "actions" | "deployments" | "checks" | "secrets" | "variables" | "properties";
  kind: string;
  /** Who asked: `installation:ID`, `user:LOGIN`, `control`. */
  by: string;
  detail: Record<string, unknown>;
}

export interface EffectsLog {
  readonly entries: readonly Effect[];
  record(effect: Omit<Effect, "at">): void;
  /** Entries of one domain and optionally one kind. */
  of(domain: Effect["domain"], kind?: string): Effect[];
  clear(): void;
}

/** `forward` also hands each effect to the hub's shared log (when the core offers one). */
export function createEffectsLog(timestamp: () => string, forward?: (kind: string, details: Record<string, unknown>) => void): EffectsLog {
  const entries: Effect[] = [];
  return {
    entries,
    record(effect) {
      entries.push({ at: timestamp(), ...effect });
      forward?.(`${effect.domain}.${effect.kind}`, { by: effect.by, ...effect.detail });
    },
    of(domain, kind) {
      return entries.filter((e) => e.domain === domain && (kind === undefined || e.kind === kind));
    },
    clear() {
      entries.length = 0;
    },
  };
}
