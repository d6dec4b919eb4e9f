// The console's HTTP surface: sign-in through the app's OAuth client, sessions, CSRF, and
// the routing of /console/* to pages. Mounted by the service server beside the webhook path.
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBody } from "../intake/body.js";
import { safeErrorMessage } from "../log/redact.js";
import { exchangeCode, userClient, webBaseOf, type Access } from "./github.js";
import { frame, html, type PageOut, type Viewer } from "./html.js";
import { cookie, createSealer, readCookies } from "./session.js";
import type { ConsoleDeps, PageContext } from "./types.js";
import { overviewPage } from "./pages/overview.js";
import { deliveriesPage } from "./pages/deliveries.js";
import { deliveryPage } from "./pages/delivery.js";
import { acknowledgeAction, deadPage, replayAction, type ActionResult } from "./pages/dead.js";
import { policyPage } from "./pages/policy.js";
import { pauseAction, pausesPage } from "./pages/pauses.js";
import { handlerPages, handlerRoutes } from "./handler-pages.js";
import { liveStream } from "./live.js";
import { ownsAny } from "./pages/scope.js";

const SESSION_COOKIE = "steward_session";
const SIGNIN_COOKIE = "steward_signin";
const SESSION_TTL_MS = 8 * 3_600_000;
const SIGNIN_TTL_MS = 10 * 60_000;
/** What a person may see is asked of GitHub again after this long. */
const ACCESS_TTL_MS = 5 * 60_000;
const MAX_CACHED_ACCESS = 1_000;
const MAX_FORM_BYTES = 16 * 1024;
/** A console URL longer than this is refused (400): every filter, cursor and link fits well inside. */
export const MAX_URL_CHARS = 4_096;
/** Requests one person (a login) may have in flight at once, live streams aside; more wait for a 429. */
export const MAX_IN_FLIGHT_PER_LOGIN = 8;
/** "Replay all" runs (and their confirmations) at once: one per person, a few in all (each may queue up to 1,000). */
const MAX_BULK_REPLAYS = 4;
/** Revocations remembered in memory besides the store (the store is the authority). */
const MAX_REMEMBERED_REVOCATIONS = 10_000;
/** The intake's form of a delivery id (X-GitHub-Delivery): anything else names no delivery. */
const DELIVERY_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Account and repository names as GitHub gives them. */
const OWNER_NAME = /^[A-Za-z0-9_-]{1,39}$/;
const REPO_NAME = /^[A-Za-z0-9._-]{1,100}$/;

interface Session {
  sid: string;
  login: string;
  /** The user-to-server token: only ever inside the sealed cookie and server memory. */
  token: string;
  csrf: string;
}

export interface ConsoleRoutes {
  /** Whether the path is the console's. */
  owns(path: string): boolean;
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** End live streams (shutdown). */
  close(): void;
}

type Page = (ctx: PageContext) => Promise<PageOut>;

/** The store key that says a session was signed out (kept as long as the session could live). */
export function revokedKey(sid: string): string {
  return `console:revoked:${sid}`;
}

/**
 * The path's segments after `/console/`, percent-decoded, or a reason it is malformed: a bad escape,
 * or an id or name in a place where the console only ever links well-formed ones.
 */
function segmentsOf(path: string): { ok: true; segments: string[] } | { ok: false; reason: string } {
  if (!path.startsWith("/console/")) return { ok: true, segments: [] };
  const segments: string[] = [];
  for (const raw of path.slice("/console/".length).split("/")) {
    try {
      segments.push(decodeURIComponent(raw));
    } catch {
      return { ok: false, reason: "malformed percent-escape in the path" };
    }
  }
  if (segments[0] === "deliveries" && segments.length >= 2 && segments[1] !== "" && !DELIVERY_ID.test(segments[1]!)) {
    return { ok: false, reason: "not a delivery id" };
  }
  if (
    segments[0] === "policies" &&
    segments.length === 3 &&
    !(OWNER_NAME.test(segments[1]!) && REPO_NAME.test(segments[2]!) && !/^\.+$/.test(segments[2]!))
  ) {
    return { ok: false, reason: "not a repository name" };
  }
  return { ok: true, segments };
}

const pages: { pattern: RegExp; page: Page; ownersOnly?: boolean }[] = [
  { pattern: /^\/console\/?$/, page: overviewPage },
  { pattern: /^\/console\/deliveries\/?$/, page: deliveriesPage },
  { pattern: /^\/console\/deliveries\/[^/]+$/, page: deliveryPage },
  { pattern: /^\/console\/dead\/?$/, page: deadPage, ownersOnly: true },
  { pattern: /^\/console\/policies\/[^/]+\/[^/]+$/, page: policyPage },
  { pattern: /^\/console\/pauses\/?$/, page: pausesPage, ownersOnly: true },
];

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Only same-site paths after sign-in: never an open redirect. */
function safeReturn(path: string | null | undefined): string {
  return path && /^\/console(\/[^\s\\]*)?$/.test(path) && !path.startsWith("//") ? path : "/console";
}

export function createConsole(deps: ConsoleDeps): ConsoleRoutes {
  const log = deps.logger.child({ component: "console" });
  const sealer = createSealer(deps.sessionSecret);
  const accessCache = new Map<string, { access: Access; at: number }>();
  /** One question to GitHub per session at a time: concurrent requests of a session share it. */
  const accessAsked = new Map<string, Promise<Access>>();
  const live = liveStream(deps);
  /** Sessions signed out, as seen by this process (the store's record is what every process reads). */
  const revokedHere = new Set<string>();
  const inFlight = new Map<string, number>();
  const bulkReplays = new Set<string>();

  function secure(): boolean {
    return deps.baseUrl().startsWith("https:");
  }

  function send(
    res: ServerResponse,
    status: number,
    body: string,
    headers: Record<string, string> = {},
    nonce?: string,
  ): void {
    res.writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "content-length": Buffer.byteLength(body),
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "x-frame-options": "DENY",
      "referrer-policy": "same-origin",
      "content-security-policy": `default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'${nonce ? `; script-src 'nonce-${nonce}'` : ""}`,
      ...headers,
    });
    res.end(body);
  }

  function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
    res.writeHead(303, {
      location,
      "cache-control": "no-store",
      ...(cookies.length ? { "set-cookie": cookies } : {}),
      "content-length": 0,
    });
    res.end();
  }

  // The handlers' pages, routed and linked from the navigation after the console's own.
  const routes = [...pages, ...handlerRoutes(deps)];
  const nav = handlerPages(deps).map((p) => ({
    href: `/console/${p.path}`,
    title: p.title,
    ...(p.ownersOnly ? { ownersOnly: true } : {}),
  }));

  /** `path`: the page's own, marked in the navigation. */
  function renderPage(res: ServerResponse, page: PageOut, viewer: Viewer | undefined, path?: string): void {
    const nonce = randomBytes(16).toString("base64");
    send(res, page.status ?? 200, frame(page, viewer, nonce, nav, path), {}, nonce);
  }

  function sessionOf(req: IncomingMessage): Session | undefined {
    return sealer.open<Session>(readCookies(req.headers.cookie).get(SESSION_COOKIE), SESSION_COOKIE);
  }

  async function accessOf(session: Session): Promise<Access> {
    const cached = accessCache.get(session.sid);
    if (cached && Date.now() - cached.at < ACCESS_TTL_MS) return cached.access;
    let asked = accessAsked.get(session.sid);
    if (!asked) {
      asked = userClient(deps.apiUrl, session.token)
        .access(deps.appId)
        .then((access) => {
          if (accessCache.size >= MAX_CACHED_ACCESS) accessCache.delete(accessCache.keys().next().value!);
          if (!revokedHere.has(session.sid)) accessCache.set(session.sid, { access, at: Date.now() });
          return access;
        })
        .finally(() => accessAsked.delete(session.sid));
      accessAsked.set(session.sid, asked);
    }
    return asked;
  }

  /** Whether a session was signed out (here, on another replica, or before a restart). Throws when the store cannot say. */
  async function revoked(sid: string): Promise<boolean> {
    if (revokedHere.has(sid)) return true;
    return (await deps.store.kv.get(revokedKey(sid))) !== undefined;
  }

  async function revoke(session: Session): Promise<void> {
    if (revokedHere.size >= MAX_REMEMBERED_REVOCATIONS) revokedHere.delete(revokedHere.values().next().value!);
    revokedHere.add(session.sid);
    accessCache.delete(session.sid);
    live.endSession(session.sid);
    // Kept as long as the cookie could still open: after that it is expired anyway.
    await deps.store.kv.set(revokedKey(session.sid), { at: Date.now() }, { ttlMs: SESSION_TTL_MS });
  }

  function badRequest(res: ServerResponse, reason: string): void {
    // A stranger's malformed URL is not Steward's fault: noted at debug, never as an error.
    log.debug({ reason }, "console request refused as malformed");
    send(res, 400, `<!doctype html><title>Bad request</title><p>Bad request: ${reason.replace(/[<>&"']/g, "")}.</p>`, {
      connection: "close",
    });
  }

  function tooMany(res: ServerResponse, what: string): void {
    send(res, 429, `<!doctype html><title>Too many requests</title><p>${what} Try again in a moment.</p>`, {
      "retry-after": "5",
    });
  }

  function offPage(res: ServerResponse, status: number): void {
    renderPage(
      res,
      {
        status,
        title: "Console is off",
        body: html`<p>The console is off: Steward has no OAuth client to sign people in with.</p>
        <p>Set <code>GITHUB_CLIENT_ID</code> and <code>GITHUB_CLIENT_SECRET</code> (the GitHub App's client id and a client secret,
        written by the manifest flow) and restart Steward. See the README's Console section.</p>`,
      },
      undefined,
    );
  }

  async function signIn(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const state = randomBytes(16).toString("base64url");
    const back = safeReturn(url.searchParams.get("next"));
    const sealed = sealer.seal({ state, back }, SIGNIN_COOKIE, SIGNIN_TTL_MS);
    const authorize = new URL(`${webBaseOf(deps.apiUrl)}/login/oauth/authorize`);
    authorize.searchParams.set("client_id", deps.oauth!.clientId);
    authorize.searchParams.set("redirect_uri", `${deps.baseUrl()}/console/callback`);
    authorize.searchParams.set("state", state);
    redirect(res, authorize.toString(), [
      cookie(SIGNIN_COOKIE, sealed, { maxAgeSeconds: SIGNIN_TTL_MS / 1000, secure: secure(), path: "/console" }),
    ]);
  }

  async function callback(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const pending = sealer.open<{ state: string; back: string }>(
      readCookies(req.headers.cookie).get(SIGNIN_COOKIE),
      SIGNIN_COOKIE,
    );
    const state = url.searchParams.get("state") ?? "";
    const code = url.searchParams.get("code") ?? "";
    const clear = cookie(SIGNIN_COOKIE, "", { maxAgeSeconds: 0, secure: secure(), path: "/console" });
    if (!pending || !code || !sameText(state, pending.state)) {
      res.setHeader("set-cookie", clear);
      renderPage(
        res,
        {
          status: 400,
          title: "Sign-in failed",
          body: html`<p>This sign-in expired or did not start here. <a href="/console/login">Sign in again</a>.</p>`,
        },
        undefined,
      );
      return;
    }
    try {
      const token = await exchangeCode({
        apiUrl: deps.apiUrl,
        ...deps.oauth!,
        code,
        redirectUri: `${deps.baseUrl()}/console/callback`,
      });
      const sid = randomBytes(16).toString("base64url");
      const access = await userClient(deps.apiUrl, token).access(deps.appId);
      accessCache.set(sid, { access, at: Date.now() });
      const session: Session = { sid, login: access.login, token, csrf: randomBytes(24).toString("base64url") };
      const sealed = sealer.seal(session, SESSION_COOKIE, SESSION_TTL_MS);
      log.info(
        { login: access.login, repositories: access.repositories.length, owner: access.ownerOf.length > 0 },
        "console sign-in",
      );
      redirect(res, pending.back, [
        clear,
        cookie(SESSION_COOKIE, sealed, { maxAgeSeconds: SESSION_TTL_MS / 1000, secure: secure() }),
      ]);
    } catch (error) {
      log.warn({ error: safeErrorMessage(error) }, "console sign-in failed");
      res.setHeader("set-cookie", clear);
      renderPage(
        res,
        {
          status: 502,
          title: "Sign-in failed",
          body: html`<p>GitHub did not complete the sign-in. <a href="/console/login">Try again</a>.</p>`,
        },
        undefined,
      );
    }
  }

  /** A POST's form, after its CSRF token and origin were checked; undefined when refused (answered). */
  async function checkedForm(
    req: IncomingMessage,
    res: ServerResponse,
    session: Session,
  ): Promise<URLSearchParams | undefined> {
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== "null" && origin !== new URL(deps.baseUrl()).origin) {
      send(res, 403, "<!doctype html><title>Forbidden</title><p>Cross-site request refused.</p>");
      return undefined;
    }
    const body = await readBody(req, MAX_FORM_BYTES);
    if (!body.ok) {
      send(res, 413, "<!doctype html><title>Too large</title><p>Form too large.</p>", { connection: "close" });
      return undefined;
    }
    const form = new URLSearchParams(body.body.toString("utf8"));
    if (!sameText(form.get("csrf") ?? "", session.csrf)) {
      send(
        res,
        403,
        "<!doctype html><title>Forbidden</title><p>The form expired or did not come from this console. Reload the page and try again.</p>",
      );
      return undefined;
    }
    return form;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = req.url ?? "/";
    if (raw.length > MAX_URL_CHARS) return badRequest(res, `the address is longer than ${MAX_URL_CHARS} characters`);
    let url: URL;
    try {
      url = new URL(raw, "http://console.invalid");
    } catch {
      return badRequest(res, "malformed address");
    }
    const path = url.pathname;
    const method = req.method ?? "GET";
    const parsed = segmentsOf(path);
    if (!parsed.ok) return badRequest(res, parsed.reason);
    const segments = parsed.segments;
    if (path === "/") return redirect(res, "/console");
    if (path === "/steward.schema.json") {
      res.writeHead(200, {
        "content-type": "application/schema+json",
        "content-length": Buffer.byteLength(deps.schemaJson),
        "cache-control": "public, max-age=300",
        "access-control-allow-origin": "*",
      });
      res.end(method === "HEAD" ? undefined : deps.schemaJson);
      return;
    }
    if (!deps.oauth) return offPage(res, path === "/console" || path === "/console/" ? 200 : 404);
    if (path === "/console/login" && method === "GET") return signIn(req, res, url);
    if (path === "/console/callback" && method === "GET") return callback(req, res, url);

    let session = sessionOf(req);
    if (session) {
      try {
        if (await revoked(session.sid)) session = undefined;
      } catch (error) {
        // Fail closed: a session the store cannot vouch for opens nothing.
        log.warn({ error: safeErrorMessage(error) }, "console could not check whether a session was signed out");
        send(
          res,
          503,
          "<!doctype html><title>Unavailable</title><p>The console cannot check your session now; try again shortly.</p>",
          { "retry-after": "5" },
        );
        return;
      }
    }
    const signedOut = cookie(SESSION_COOKIE, "", { maxAgeSeconds: 0, secure: secure() });
    if (path === "/console/logout" && method === "POST") {
      if (session) {
        if (!(await checkedForm(req, res, session))) return;
        try {
          await revoke(session);
        } catch (error) {
          log.warn({ error: safeErrorMessage(error) }, "console sign-out could not be recorded in the store");
          send(
            res,
            503,
            "<!doctype html><title>Unavailable</title><p>Signing out could not be recorded; try again shortly.</p>",
            { "retry-after": "5" },
          );
          return;
        }
      }
      return redirect(res, "/console", [signedOut]);
    }
    if (!session) {
      if (method !== "GET" && method !== "HEAD") {
        send(res, 403, "<!doctype html><title>Forbidden</title><p>Sign in first.</p>");
        return;
      }
      if (path === "/console" || path === "/console/") {
        return renderPage(
          res,
          {
            title: "Console",
            body: html`<p>Steward's console shows what Steward decided and why, for the repositories you can access.</p>
          <p><a href="/console/login">Sign in with GitHub</a></p>`,
          },
          undefined,
        );
      }
      // Only a short way back rides along: the sign-in address must stay within the URL bound.
      const back = path + url.search;
      return redirect(
        res,
        `/console/login?next=${encodeURIComponent(back.length <= 1_024 ? back : path.slice(0, 1_024))}`,
      );
    }

    // Per person (the login the session was opened for), not only in all: one person's burst of
    // requests, including the questions to GitHub it causes, waits for its own answers.
    const person = session.login.toLowerCase();
    const held = inFlight.get(person) ?? 0;
    if (held >= MAX_IN_FLIGHT_PER_LOGIN)
      return tooMany(res, `At most ${MAX_IN_FLIGHT_PER_LOGIN} requests at once per person.`);
    inFlight.set(person, held + 1);
    try {
      await signedIn(req, res, url, segments, session, person);
    } finally {
      const left = (inFlight.get(person) ?? 1) - 1;
      if (left > 0) inFlight.set(person, left);
      else inFlight.delete(person);
    }
  }

  async function signedIn(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    segments: string[],
    session: Session,
    person: string,
  ): Promise<void> {
    let access: Access;
    try {
      access = await accessOf(session);
    } catch (error) {
      log.warn({ error: safeErrorMessage(error) }, "console could not ask GitHub what the user may see");
      return renderPage(
        res,
        {
          status: 502,
          title: "GitHub unavailable",
          body: html`<p>GitHub did not say what you may see; try again shortly, or <a href="/console/login">sign in again</a>.</p>`,
        },
        undefined,
      );
    }
    const viewer: Viewer = { login: access.login, owner: ownsAny({ access }), csrf: session.csrf };
    const ctx: PageContext = { viewer, access, scope: access.repositories, url, segments, deps };
    const sid = session.sid;
    if (url.pathname === "/console/events" && req.method === "GET") {
      // The stream outlives this request: it is bounded by the streams' own per-person count.
      return live.serve(req, res, ctx, {
        login: person,
        sid,
        alive: () =>
          revoked(sid).then(
            (r) => !r,
            () => false,
          ),
      });
    }
    await route(req, res, ctx, session, person);
  }

  async function route(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: PageContext,
    session: Session,
    person: string,
  ): Promise<void> {
    const { viewer, url } = ctx;
    const path = url.pathname;
    const method = req.method ?? "GET";
    const bulk = path === "/console/dead/replay";
    if (method === "POST" && (path === "/console/pauses/pause" || path === "/console/pauses/resume")) {
      const form = await checkedForm(req, res, session);
      if (!form) return;
      // Who may pause what is decided per scope (pages/pauses.ts): an owner of what it covers.
      const done = await pauseAction(ctx, form, path.endsWith("/pause") ? "pause" : "resume");
      if ("page" in done) return renderPage(res, done.page, viewer);
      return redirect(res, done.redirect);
    }
    const onDelivery = ctx.segments[0] === "deliveries" && ctx.segments.length === 3 ? ctx.segments[2] : undefined;
    if (method === "POST" && (bulk || onDelivery === "replay" || onDelivery === "acknowledge")) {
      const form = await checkedForm(req, res, session);
      if (!form) return;
      if (!viewer.owner) {
        return renderPage(
          res,
          {
            status: 403,
            title: "Not allowed",
            body: html`<p>Only organisation owners replay or acknowledge deliveries.</p>`,
          },
          viewer,
        );
      }
      if (bulk) {
        if (bulkReplays.has(person))
          return tooMany(res, "Your previous replay of all matching dead letters is still running.");
        if (bulkReplays.size >= MAX_BULK_REPLAYS)
          return tooMany(res, "Other replays of all matching dead letters are running.");
        bulkReplays.add(person);
      }
      let done: ActionResult | undefined;
      try {
        done = onDelivery === "acknowledge" ? await acknowledgeAction(ctx, form) : await replayAction(ctx, form);
      } finally {
        if (bulk) bulkReplays.delete(person);
      }
      if (done === undefined) {
        return renderPage(
          res,
          {
            status: 403,
            title: "Not allowed",
            body: html`<p>You may not act on this delivery: only owners of the organisation that received it do.</p>`,
          },
          viewer,
        );
      }
      if ("page" in done) return renderPage(res, done.page, viewer);
      return redirect(res, done.redirect);
    }
    if (method !== "GET" && method !== "HEAD") {
      send(res, 405, "<!doctype html><title>Method not allowed</title><p>Method not allowed.</p>", {
        allow: "GET, HEAD",
      });
      return;
    }
    const entry = routes.find((p) => p.pattern.test(path));
    if (!entry) return renderPage(res, { status: 404, title: "Not found", body: html`<p>No such page.</p>` }, viewer);
    if (entry.ownersOnly && !viewer.owner) {
      return renderPage(
        res,
        { status: 403, title: "Owners only", body: html`<p>This page is for organisation owners.</p>` },
        viewer,
      );
    }
    renderPage(res, await entry.page(ctx), viewer, path);
  }

  return {
    owns: (path) =>
      path === "/" || path === "/steward.schema.json" || path === "/console" || path.startsWith("/console/"),
    handle,
    close: () => live.close(),
  };
}
