// Caches a long-lived process keeps per installation, repository or file must not grow with every
// one it ever met: each keeps the ones used last, a Map whose insertion order is the order of use.

/** Puts `value` at `key` as the most recently used entry of `map`, then lets the least recently used go beyond `max`. */
export function keepRecent<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value!);
}
