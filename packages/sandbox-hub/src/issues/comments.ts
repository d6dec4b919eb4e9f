// Comments on issues and pull requests, per hub, keyed `repoId#number`; the routes, the control
// API's simulated users and reactions reach them here.
import type { SandboxHub } from "../sandbox-hub.js";

export interface Comment {
  id: number;
  body: string;
  user: string;
  created_at: string;
}

interface Comments {
  byKey: Map<string, Comment[]>;
  nextId: number;
}

const commentsByHub = new WeakMap<SandboxHub, Comments>();

function commentsFor(hub: SandboxHub): Comments {
  let comments = commentsByHub.get(hub);
  if (!comments) commentsByHub.set(hub, (comments = { byKey: new Map(), nextId: 1 }));
  return comments;
}

/** Comments of an issue or pull request, oldest first. */
export function commentsOf(hub: SandboxHub, repoId: number, number: number): Comment[] {
  return commentsByHub.get(hub)?.byKey.get(`${repoId}#${number}`) ?? [];
}

/** Adds a comment by `user` (a route's caller or a simulated user) and returns it. */
export function addComment(hub: SandboxHub, repoId: number, number: number, body: string, user: string): Comment {
  const store = commentsFor(hub);
  const key = `${repoId}#${number}`;
  const comment: Comment = { id: store.nextId++, body, user, created_at: hub.timestamp() };
  store.byKey.set(key, [...(store.byKey.get(key) ?? []), comment]);
  return comment;
}

/** The comment with this id in a repository, with the number it belongs to. */
export function findComment(
  hub: SandboxHub,
  repoId: number,
  id: number,
): { number: number; comment: Comment } | undefined {
  for (const [key, list] of commentsByHub.get(hub)?.byKey ?? []) {
    if (!key.startsWith(`${repoId}#`)) continue;
    const comment = list.find((c) => c.id === id);
    if (comment) return { number: Number(key.split("#")[1]), comment };
  }
  return undefined;
}
