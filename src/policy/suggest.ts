// Did-you-mean suggestions for unknown keys, enum values and document names.
import { distance } from "fastest-levenshtein";

/** The closest candidate to `word` when it is close enough to be a plausible typo, else undefined. */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const lower = word.toLowerCase();
  // A third of the word's length, at least 2: catches "max_atempts" but not unrelated short keys.
  const limit = Math.max(2, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const other = candidate.toLowerCase();
    // A shortened name ("repos" for "repositories") is as likely a slip as a typo.
    const abbreviation = lower.length >= 3 && other.startsWith(lower);
    const d = abbreviation ? Math.min(limit, distance(lower, other)) : distance(lower, other);
    if (d < bestDistance && d <= limit) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** ` (did you mean "x"?)` or an empty string. */
export function suggestionNote(suggestion: string | undefined): string {
  return suggestion === undefined ? "" : ` (did you mean "${suggestion}"?)`;
}
