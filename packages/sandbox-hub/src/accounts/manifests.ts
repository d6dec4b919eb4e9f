// The GitHub App Manifest flow (docs: "Registering a GitHub App from a manifest"): a form posts
// a manifest to `/settings/apps/new` (or an organisation's), GitHub redirects to the manifest's
// `redirect_url` with a temporary `code`, and `POST /app-manifests/{code}/conversions` trades
// the code for the app's credentials. The sandbox approves at once (no person clicks "Create")
// and hosts one app: a conversion gives the hub's app the manifest's name, webhook URL and new
// credentials (a new key pair, webhook secret and OAuth client secret), so what it returns
// works at once against the hub, on the installations the hub already has.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { HubError, type HubRequest, type HubResponse } from "../core/types.js";
import type { RouteTable } from "../core/router.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { appJson } from "./app-json.js";
import { escapeHtml, type OAuthClient } from "./oauth.js";

/** GitHub's manifest codes work once, within an hour. */
const CODE_TTL_MS = 60 * 60 * 1000;
/** Bound on codes not yet exchanged (a form posted in a loop must not grow memory). */
const MAX_PENDING_CODES = 100;

interface Manifest {
  name?: string;
  url: string;
  redirect_url: string;
  hook_attributes?: { url?: string; active?: boolean };
  default_permissions?: Record<string, string>;
  default_events?: string[];
  public?: boolean;
  description?: string;
}

interface PendingCode {
  manifest: Manifest;
  org: string | undefined;
  expiresAt: number;
}

const html = (status: number, body: string): HubResponse => ({
  status,
  raw: `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Register a GitHub App (sandbox)</title></head><body><main>${body}</main></body></html>`,
  headers: { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" },
});

function absoluteUrl(value: unknown): value is string {
  if (typeof value !== "string") return false;
  try {
    const u = new URL(value);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

/** Pure: the manifest posted in the form, or what is wrong with it. */
export function parseManifest(raw: unknown): Manifest | { error: string } {
  if (typeof raw !== "string" || raw.trim() === "") return { error: "the form has no manifest field" };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { error: "the manifest is not JSON" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { error: "the manifest is not a JSON object" };
  const m = value as Record<string, unknown>;
  if (!absoluteUrl(m.url)) return { error: "url is required: the app's homepage, an absolute http(s) URL" };
  if (!absoluteUrl(m.redirect_url)) return { error: "redirect_url is required: where the sandbox sends the code" };
  const hook = m.hook_attributes as Manifest["hook_attributes"] | undefined;
  if (hook !== undefined && (typeof hook !== "object" || hook === null))
    return { error: "hook_attributes must be an object" };
  if (hook && hook.active !== false && !absoluteUrl(hook.url))
    return { error: "hook_attributes.url is required while the webhook is active" };
  if (m.name !== undefined && (typeof m.name !== "string" || m.name.length > 34))
    return { error: "name must be a string of at most 34 characters" };
  if (
    m.default_events !== undefined &&
    (!Array.isArray(m.default_events) || !m.default_events.every((e) => typeof e === "string"))
  ) {
    return { error: "default_events must be a list of event names" };
  }
  if (
    m.default_permissions !== undefined &&
    (typeof m.default_permissions !== "object" || m.default_permissions === null)
  ) {
    return { error: "default_permissions must be an object" };
  }
  return m as unknown as Manifest;
}

function slugOf(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "") || "app"
  );
}

export function installManifestRoutes(hub: SandboxHub, router: RouteTable, oauth: OAuthClient): void {
  const codes = new Map<string, PendingCode>();
  const dropExpired = () => {
    const now = Date.now();
    for (const [code, p] of codes) if (p.expiresAt <= now) codes.delete(code);
  };

  const page = (req: HubRequest): HubResponse => {
    const action = escapeHtml(req.path + (req.query.size ? `?${req.query.toString()}` : ""));
    return html(
      200,
      `<h1>Register a GitHub App from a manifest</h1>
<p>This is the sandbox hub. Post a manifest (JSON) in a form field named <code>manifest</code>; the sandbox approves it at once and redirects to its <code>redirect_url</code> with a code.</p>
<form method="post" action="${action}"><textarea name="manifest" rows="12" cols="80"></textarea><button type="submit">Create GitHub App</button></form>`,
    );
  };

  const create = (req: HubRequest, org: string | undefined): HubResponse => {
    if (org !== undefined && !hub.org(org)) return html(404, "<h1>Not Found</h1><p>No such organisation.</p>");
    const manifest = parseManifest(req.body?.manifest);
    if ("error" in manifest) return html(422, `<h1>Invalid manifest</h1><p>${escapeHtml(manifest.error)}</p>`);
    dropExpired();
    if (codes.size >= MAX_PENDING_CODES) throw new HubError(429, "Too many app registrations in progress");
    const code = randomBytes(20).toString("hex");
    codes.set(code, { manifest, org, expiresAt: Date.now() + CODE_TTL_MS });
    const target = new URL(manifest.redirect_url);
    target.searchParams.set("code", code);
    const state = req.query.get("state");
    if (state) target.searchParams.set("state", state);
    return { status: 302, headers: { Location: target.toString(), "Cache-Control": "no-store" } };
  };

  router.add("GET", "/settings/apps/new", page, { auth: "none" });
  router.add("POST", "/settings/apps/new", (req) => create(req, undefined), { auth: "none" });
  router.add("GET", "/organizations/{org}/settings/apps/new", page, { auth: "none" });
  router.add("POST", "/organizations/{org}/settings/apps/new", (req) => create(req, req.params.org!), { auth: "none" });

  router.add(
    "POST",
    "/app-manifests/{code}/conversions",
    (req): HubResponse => {
      const code = req.params.code!;
      const pending = codes.get(code);
      codes.delete(code);
      if (!pending || pending.expiresAt <= Date.now()) throw new HubError(404, "Not Found");
      const { manifest } = pending;
      const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
      const pem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
      const webhookSecret = randomBytes(20).toString("hex");
      oauth.clientSecret = randomBytes(20).toString("hex");
      hub.appPublicKey = publicKey;
      if (manifest.name) {
        hub.appName = manifest.name;
        hub.appSlug = slugOf(manifest.name);
      }
      hub.hook.url = manifest.hook_attributes?.active === false ? undefined : manifest.hook_attributes?.url;
      hub.hook.secret = webhookSecret;
      const app = appJson(hub);
      return {
        status: 201,
        body: {
          ...app,
          owner: pending.org ? hub.userJson(pending.org) : app.owner,
          description: manifest.description ?? null,
          external_url: manifest.url,
          permissions: { metadata: "read", ...(manifest.default_permissions ?? {}) },
          events: manifest.default_events ?? [],
          client_id: oauth.clientId,
          client_secret: oauth.clientSecret,
          webhook_secret: webhookSecret,
          pem,
        },
      };
    },
    { auth: "none" },
  );
}
