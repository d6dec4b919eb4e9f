// One log of what clients and the control surface made the hub do (pushes, pull requests, re-runs
// requested, secrets written, reviews recorded...), so tests and the demo judge a client by its effects.

import { appendBounded } from "./bounded-log.js";

/** Effects the log keeps (the newest). */
export const MAX_EFFECTS = 50_000;

export interface Effect {
  /** Sandbox-clock timestamp. */
  at: string;
  /** `area.what`: `push`, `issues.commented`, `deployments.review.approved`, `secrets.secret.created`. */
  kind: string;
  /** Who asked: `installation:ID`, `user:LOGIN`, `control`, or `hub` for what the hub did on its own. */
  by: string;
  detail: Record<string, unknown>;
}

export class EffectsLog {
  readonly entries: Effect[] = [];

  constructor(private readonly timestamp: () => string) {}

  record(kind: string, by: string, detail: Record<string, unknown> = {}): void {
    appendBounded(this.entries, { at: this.timestamp(), kind, by, detail }, MAX_EFFECTS);
  }

  /** Entries of one area (`deployments`), or of one kind in it (`"deployments", "review.approved"`). */
  of(area: string, kind?: string): Effect[] {
    return this.entries.filter((e) =>
      kind === undefined ? e.kind.startsWith(`${area}.`) : e.kind === `${area}.${kind}`,
    );
  }

  clear(): void {
    this.entries.length = 0;
  }
}
