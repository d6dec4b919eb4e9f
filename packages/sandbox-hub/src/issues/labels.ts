// Label names on issues and pull requests (a pull request is an issue: its number is the issue
// number), per hub, keyed `repoId#number`, in the order they were added.
import type { SandboxHub } from "../sandbox-hub.js";

const labelsByHub = new WeakMap<SandboxHub, Map<string, string[]>>();

/** The hub's label lists, the routes' to change. */
export function labelLists(hub: SandboxHub): Map<string, string[]> {
  let lists = labelsByHub.get(hub);
  if (!lists) labelsByHub.set(hub, (lists = new Map()));
  return lists;
}

/** Labels of an issue or pull request, for tests (`control`-side view). */
export function labelsOf(hub: SandboxHub, repoId: number, number: number): string[] {
  return [...(labelsByHub.get(hub)?.get(`${repoId}#${number}`) ?? [])];
}
