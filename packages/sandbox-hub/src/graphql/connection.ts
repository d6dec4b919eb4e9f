// Relay connections over an in-memory list: opaque cursors are offsets, `first` is capped at 100
// and required to be 1..100 as on GitHub.
import { GraphQLError } from "graphql";

export function cursorOf(index: number): string {
  return Buffer.from(`cursor:${index}`).toString("base64");
}

function offsetAfter(after: unknown): number {
  if (after === undefined || after === null) return 0;
  const m = /^cursor:(\d+)$/.exec(Buffer.from(String(after), "base64").toString("utf8"));
  if (!m)
    throw new GraphQLError(`\`${String(after)}\` does not appear to be a valid cursor.`, {
      extensions: { type: "INVALID_CURSOR_ARGUMENTS" },
    });
  return Number(m[1]) + 1;
}

export function connection<T>(
  items: T[],
  args: { first?: unknown; after?: unknown },
): { totalCount: number; nodes: T[]; pageInfo: Record<string, unknown> } {
  const first = args.first ?? 100;
  if (typeof first !== "number" || first < 1 || first > 100) {
    throw new GraphQLError(
      `Requesting ${String(first)} records on the connection exceeds the \`first\` limit of 100 records.`,
      { extensions: { type: "EXCESSIVE_PAGINATION" } },
    );
  }
  const start = offsetAfter(args.after);
  const nodes = items.slice(start, start + first);
  const end = start + nodes.length - 1;
  return {
    totalCount: items.length,
    nodes,
    pageInfo: {
      hasNextPage: start + nodes.length < items.length,
      hasPreviousPage: start > 0,
      startCursor: nodes.length ? cursorOf(start) : null,
      endCursor: nodes.length ? cursorOf(end) : null,
    },
  };
}
