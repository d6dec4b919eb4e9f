// What every handler's impact simulation shares: it runs on the newest of the decision facts
// the handler stored, however its store lists them.

/** The newest `limit` records, oldest first (records come in any order). */
export function newest<T extends { at: string }>(records: readonly T[], limit: number): T[] {
  return [...records].sort((a, b) => a.at.localeCompare(b.at)).slice(-limit);
}
