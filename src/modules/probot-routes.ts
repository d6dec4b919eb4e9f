// HTTP routes of Probot apps (`getRouter(path)`, Probot <= 10's `app.route(path)`), served on
// Steward's own server. Each call returns an Express router (Probot's contract) mounted at the
// path given, or at `/probot/<app name>` without one. A mount that would take one of Steward's
// own paths is refused while the app loads, naming both, so it never fails a request later.
import type { NextFunction, Request, Response, Router } from "express";
import { createRequire } from "node:module";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { HandlerModule } from "../handler.js";
import type { MountedPages } from "../intake/server.js";
import { safeErrorMessage } from "../log/redact.js";
import { runHosted, type HostedRun } from "./hosted-scope.js";

/** The express module, loaded when a Probot app first mounts routes: a service that hosts none never loads it. */
function loadExpress(): typeof import("express") {
  return createRequire(import.meta.url)("express") as typeof import("express");
}

/** Paths Steward serves itself, besides the webhook path; a prefix owns everything under it. */
export const STEWARD_OWN_PATHS = ["/", "/console", "/healthz", "/readyz", "/metrics", "/steward.schema.json"] as const;

interface Mount {
  app: string;
  prefix: string;
  router: Router;
}

const mountsOf = new WeakMap<HandlerModule<any>, Mount[]>();

/** A mount path as Steward compares it: leading slash, no trailing slash ("" is the root). */
function normalise(path: string): string {
  const trimmed = path.trim().replace(/\/+$/, "");
  return trimmed === "" ? "" : trimmed.startsWith("/") ? trimmed : `/${trimmed}`;
}

/** Pure: the Steward path a mount at `prefix` would shadow (or be shadowed by), if any. */
export function mountConflict(prefix: string, reserved: readonly string[]): string | undefined {
  const p = normalise(prefix);
  if (p === "") return "/ (every path)";
  for (const raw of reserved) {
    const r = normalise(raw) || "/";
    if (r === "/") continue; // only the exact root is Steward's, and p is never the root here
    if (r === p || r.startsWith(`${p}/`) || p.startsWith(`${r}/`)) return r;
  }
  return undefined;
}

/** The route-mounting functions handed to one Probot app while it loads. */
export function routeMounter(app: string, reserved: readonly string[]) {
  const mounts: Mount[] = [];
  return {
    mounts,
    /** `call` names the app's call in a refusal ("getRouter()", "app.route()"). */
    mount(path: string | undefined, call: string): Router {
      const prefix = normalise(path ?? `/probot/${app}`);
      const conflict = mountConflict(prefix, reserved);
      if (conflict) {
        throw new Error(
          `Probot app "${app}" called ${call} to serve routes under "${prefix || "/"}", which would shadow Steward's own ${conflict}; give getRouter a path of its own (no path: /probot/${app})`,
        );
      }
      const router = loadExpress().Router();
      mounts.push({ app, prefix, router });
      return router;
    },
  };
}

export function attachMounts(handler: HandlerModule<any>, mounts: Mount[]): void {
  if (mounts.length > 0) mountsOf.set(handler, mounts);
}

/** `to` (a wrapper of `from`) serves the routes `from` mounted. */
export function carryMounts(from: HandlerModule<any>, to: HandlerModule<any>): void {
  const mounts = mountsOf.get(from);
  if (mounts) mountsOf.set(to, mounts);
}

/** Every Probot app route among the handlers, as pages of Steward's server; undefined when there is none. */
export function probotRoutePages(
  handlers: readonly HandlerModule<any>[],
  logger: Logger,
  /** The hosted scope a route of `app` runs in: what it leaves unawaited is attributed to the app. */
  scopeOf?: (app: string) => HostedRun,
): MountedPages | undefined {
  const mounts = handlers.flatMap((h) => mountsOf.get(h) ?? []);
  if (mounts.length === 0) return undefined;
  const log = logger.child({ component: "probot-routes" });
  const express = loadExpress();
  const app = express();
  app.disable("x-powered-by");
  for (const m of mounts) {
    const scope = scopeOf?.(m.app);
    // Probot's logging middleware gave routes `req.log`; apps written for it use it.
    app.use(
      m.prefix,
      (req, _res, next) => {
        (req as Request & { log?: Logger }).log = log.child({ handler: m.app });
        if (scope) runHosted(scope, next);
        else next();
      },
      m.router,
    );
  }
  app.use((req: Request, res: Response) => {
    res.status(404).json({ message: `not found: no route of a Probot app for ${req.method} ${req.path}` });
  });
  // A route that throws (or rejects: Express 5 catches both) answers 500; the process goes on.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    log.error({ error: safeErrorMessage(error), method: req.method, path: req.path }, "a Probot app's route failed");
    if (res.headersSent) res.destroy();
    else res.status(500).json({ message: "internal error in a Probot app's route" });
  });
  const owns = (path: string) => mounts.some((m) => path === m.prefix || path.startsWith(`${m.prefix}/`));
  return {
    owns,
    handle: (req: IncomingMessage, res: ServerResponse) =>
      new Promise<void>((resolve) => {
        res.once("close", () => resolve());
        app(req as Request, res as Response);
      }),
  };
}
