// What the intake learned of a push it recorded: whether its text may name a policy file
// (route.ts, engineTakes). A run must know that before its handlers, and without the intake's
// word it reads the payload back from the store to find out: in the bench's traffic four runs
// in five that read a payload read it for this alone, a read from the payload log and a string of
// 2-25 KB each, on the event loop (analysis.md). A hint is taken once, by the first run of
// the delivery; one never taken (a duplicate, a run on another replica) is dropped, oldest
// first, past MAX_HINTS, and a run that finds none reads the text as before.

/** Hints kept at most (an id and a flag each: well under a megabyte). */
export const MAX_HINTS = 10_000;

export interface PushHints {
  /** The intake scanned push `id`: `mayTouchPolicy` is engineTakes' answer for its text. */
  note(id: string, mayTouchPolicy: boolean): void;
  /** The intake's answer for push `id`, once; undefined when there is none (read the text). */
  take(id: string): boolean | undefined;
}

export function createPushHints(max = MAX_HINTS): PushHints {
  const hints = new Map<string, boolean>();
  return {
    note(id, mayTouchPolicy) {
      hints.delete(id);
      hints.set(id, mayTouchPolicy);
      if (hints.size > max) hints.delete(hints.keys().next().value!);
    },
    take(id) {
      const hint = hints.get(id);
      if (hint !== undefined) hints.delete(id);
      return hint;
    },
  };
}
