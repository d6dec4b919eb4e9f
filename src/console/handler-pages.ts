// What handlers show in the console (`HandlerModule.console`): their pages and overview sections,
// rendered from a context that holds only what the signed-in person may see. Access is decided
// here, never by a handler: owners-only pages are refused to others before they render.
import type { ConsoleContext, ConsolePage } from "../handler.js";
import { webBaseOf } from "./github.js";
import { html, time, type Html, type PageOut } from "./html.js";
import type { PageContext } from "./types.js";
import { markdown, markdownInline } from "./markdown.js";

export interface HandlerPage extends ConsolePage {
  handler: string;
}

/** Every page the handlers add, in the order of the handlers. */
export function handlerPages(deps: PageContext["deps"]): HandlerPage[] {
  return (deps.handlerConsoles ?? []).flatMap((c) =>
    (c.console.pages ?? []).map((p) => ({ ...p, handler: c.handler })),
  );
}

const SEGMENT = /^[a-z0-9][a-z0-9-]*$/;

/** The console's routes to the handlers' pages: `/console/PATH`, a trailing slash accepted. */
export function handlerRoutes(
  deps: PageContext["deps"],
): { pattern: RegExp; page: (ctx: PageContext) => Promise<PageOut>; ownersOnly?: boolean }[] {
  return handlerPages(deps).map((p) => {
    if (!SEGMENT.test(p.path))
      throw new Error(`handler ${p.handler}: console page path "${p.path}" is not one lower-case path segment`);
    return {
      pattern: new RegExp(`^/console/${p.path}/?$`),
      page: async (ctx: PageContext) => ({ title: p.title, body: await p.render(handlerContext(ctx, p.handler)) }),
      ...(p.ownersOnly ? { ownersOnly: true } : {}),
    };
  });
}

export function handlerContext(ctx: PageContext, handler: string): ConsoleContext {
  const { deps } = ctx;
  return {
    repositories: ctx.scope,
    owns: ctx.access.ownerOf,
    query: ctx.url.searchParams,
    // Reading only: the handler's page cannot write through the console.
    store: {
      get: (key) => deps.store.kv.get(key),
      list: (prefix) => deps.store.kv.list(prefix),
      auditLog: (filter) => deps.store.kv.auditLog(filter),
    },
    tasks: async () =>
      (await deps.store.tasks.listTasks())
        .filter((t) => t.handler === handler)
        .map((t) => ({ key: t.key, runAt: t.runAt, data: t.data, status: t.status, lastError: t.lastError })),
    webUrl: webBaseOf(deps.apiUrl),
    html,
    time,
    markdown: (text, opts) => (opts?.inline ? markdownInline(text) : markdown(text)),
  };
}

/** The overview sections the handlers add, in their order. */
export async function handlerSections(ctx: PageContext): Promise<Html[]> {
  const sections = await Promise.all(
    (ctx.deps.handlerConsoles ?? []).map((c) =>
      c.console.overview ? c.console.overview(handlerContext(ctx, c.handler)) : undefined,
    ),
  );
  return sections.filter((s): s is Html => s !== undefined);
}
