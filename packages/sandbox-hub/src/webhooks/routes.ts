// The app's webhook configuration and its deliveries (list with cursor pagination,
// one delivery with request and response, redelivery).
import { notFound, validationFailed } from "../core/errors.js";
import type { RouteTable } from "../core/router.js";
import { HubError } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import type { StoredDelivery } from "./deliverer.js";

function summary(d: StoredDelivery): Record<string, unknown> {
  return {
    id: d.id,
    guid: d.guid,
    delivered_at: d.delivered_at,
    redelivery: d.redelivery,
    duration: d.duration,
    status: d.status,
    status_code: d.status_code,
    event: d.event,
    action: d.action,
    installation_id: d.installation_id,
    repository_id: d.repository_id,
    throttled_at: null,
  };
}

function configJson(hub: SandboxHub): Record<string, unknown> {
  // The secret is write-only: the API answers with a mask, never the value.
  return {
    content_type: hub.hook.content_type,
    secret: hub.hook.secret ? "********" : null,
    url: hub.hook.url ?? null,
    insecure_ssl: hub.hook.insecure_ssl,
  };
}

export function installWebhookRoutes(hub: SandboxHub, router: RouteTable): void {
  router.add("GET", "/app/hook/config", () => ({ status: 200, body: configJson(hub) }), { auth: "app" });
  router.add(
    "PATCH",
    "/app/hook/config",
    (req) => {
      const body = req.body ?? {};
      if (body.content_type !== undefined) {
        if (body.content_type !== "json" && body.content_type !== "form")
          throw validationFailed("Hook", "content_type", "invalid");
        hub.hook.content_type = body.content_type;
      }
      if (body.url !== undefined) {
        if (typeof body.url !== "string" || !/^https?:\/\//.test(body.url))
          throw validationFailed("Hook", "url", "invalid");
        hub.hook.url = body.url;
      }
      if (body.secret !== undefined) {
        if (typeof body.secret !== "string") throw validationFailed("Hook", "secret", "invalid");
        hub.hook.secret = body.secret;
      }
      if (body.insecure_ssl !== undefined) {
        const v = String(body.insecure_ssl);
        if (v !== "0" && v !== "1") throw validationFailed("Hook", "insecure_ssl", "invalid");
        hub.hook.insecure_ssl = v;
      }
      return { status: 200, body: configJson(hub) };
    },
    { auth: "app" },
  );

  router.add(
    "GET",
    "/app/hook/deliveries",
    (req) => {
      const perPage = Math.min(Math.max(Number.parseInt(req.query.get("per_page") ?? "30", 10) || 30, 1), 100);
      const cursor = req.query.get("cursor");
      // Newest first; the cursor is the id of the last delivery seen. The records are in id order
      // (an id is given when a record is made), so a page is read from the end, not sorted out of all.
      const records = hub.deliverer.records;
      const end = cursor ? firstAtOrAbove(records, Number(cursor)) : records.length;
      const page: typeof records = [];
      for (let i = end - 1; i >= 0 && page.length < perPage; i--) page.push(records[i]!);
      const headers: Record<string, string> = {};
      const last = page[page.length - 1];
      if (last && end - page.length > 0) {
        const q = new URLSearchParams(req.query);
        q.set("cursor", String(last.id));
        q.set("per_page", String(perPage));
        headers.Link = `<${req.baseUrl}${req.path}?${q.toString()}>; rel="next"`;
      }
      return { status: 200, body: page.map(summary), headers };
    },
    { auth: "app" },
  );

  router.add(
    "GET",
    "/app/hook/deliveries/{delivery_id}",
    (req) => {
      const d = hub.deliverer.byId(Number(req.params.delivery_id));
      if (!d) throw notFound();
      return { status: 200, body: { ...summary(d), url: d.url, request: d.request, response: d.response } };
    },
    { auth: "app" },
  );

  router.add(
    "POST",
    "/app/hook/deliveries/{delivery_id}/attempts",
    (req) => {
      const d = hub.deliverer.byId(Number(req.params.delivery_id));
      if (!d) throw notFound();
      if (!hub.hook.url) throw new HubError(422, "The app has no webhook URL");
      void hub.deliverer.send(d.event, d.payload, {
        installationId: d.installation_id,
        guid: d.guid,
        redelivery: true,
      });
      return { status: 202, body: {} };
    },
    { auth: "app" },
  );
}

/** The index of the first record whose id is `id` or more (records in ascending id order). */
function firstAtOrAbove(records: readonly { id: number }[], id: number): number {
  let lo = 0;
  let hi = records.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (records[mid]!.id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
