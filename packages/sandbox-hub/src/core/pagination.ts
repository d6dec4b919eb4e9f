// Page-number pagination with the `Link` header (rel first/prev/next/last), as the
// seeds' Limits section describes: default 30 items, `per_page` capped at the route's maximum.
import type { HubRequest, HubResponse } from "./types.js";

export function pageParams(query: URLSearchParams, maxPerPage = 100): { perPage: number; page: number } {
  const rawPer = Number.parseInt(query.get("per_page") ?? "", 10);
  const rawPage = Number.parseInt(query.get("page") ?? "", 10);
  const perPage = Number.isFinite(rawPer) && rawPer > 0 ? Math.min(rawPer, maxPerPage) : Math.min(30, maxPerPage);
  const page = Number.isFinite(rawPage) && rawPage > 0 ? rawPage : 1;
  return { perPage, page };
}

export function linkHeader(req: HubRequest, page: number, lastPage: number): string | undefined {
  if (lastPage <= 1 && page <= 1) return undefined;
  const url = (p: number) => {
    const q = new URLSearchParams(req.query);
    q.set("page", String(p));
    return `<${req.baseUrl}${req.path}?${q.toString()}>`;
  };
  const links: string[] = [];
  if (page > 1) links.push(`${url(Math.min(page - 1, lastPage))}; rel="prev"`);
  if (page < lastPage) links.push(`${url(page + 1)}; rel="next"`);
  if (page < lastPage) links.push(`${url(lastPage)}; rel="last"`);
  if (page > 1) links.push(`${url(1)}; rel="first"`);
  return links.join(", ");
}

export function paginate(
  req: HubRequest,
  items: unknown[],
  opts: { maxPerPage?: number; wrap?: string; totalCountKey?: string } = {},
): HubResponse {
  const { perPage, page } = pageParams(req.query, opts.maxPerPage ?? 100);
  const lastPage = Math.max(1, Math.ceil(items.length / perPage));
  const slice = items.slice((page - 1) * perPage, page * perPage);
  const headers: Record<string, string> = {};
  const link = linkHeader(req, page, lastPage);
  if (link) headers.Link = link;
  const body = opts.wrap ? { [opts.totalCountKey ?? "total_count"]: items.length, [opts.wrap]: slice } : slice;
  return { status: 200, body, headers };
}
