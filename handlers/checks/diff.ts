// What changed between two effective policies, as a list of paths with before and after.
import { isPlainObject } from "../../src/policy/index.js";

export interface ValueChange {
  path: string;
  /** undefined: the key did not exist before. */
  before: unknown;
  /** undefined: the key no longer exists. */
  after: unknown;
}

/** Changed leaves; maps are compared key by key, lists (which replace) as a whole. */
export function diffValues(before: unknown, after: unknown, path: string[] = []): ValueChange[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    return keys.flatMap((k) => diffValues(before[k], after[k], [...path, k]));
  }
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  return [{ path: path.join("."), before, after }];
}
