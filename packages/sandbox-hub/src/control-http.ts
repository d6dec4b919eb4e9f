// The control surface over HTTP under `/_sandbox/`: the same functions as `Control`
// (and each domain's control object), for the demo and for handler authors in any language.
import type { Control } from "./control.js";
import type { RouteTable } from "./core/router.js";
import { HubError, type HubRequest } from "./core/types.js";
import type { SandboxHub } from "./sandbox-hub.js";

const CONTROL_FUNCTIONS = new Set([
  "createOrg", "restrictRepo", "createUser", "userToken", "createRepo", "renameRepo", "install", "suspend", "unsuspend",
  "installation", "repo", "setWebhookUrl", "pushFiles", "readFile", "openPullRequest", "pushToPullRequest",
  "closePullRequest", "setClock", "advanceClock", "now", "setRateLimit", "setSecondaryLimit", "setFault",
  "clearFaults", "setLoginAttempts", "deliveries", "requests", "effect", "settled",
]);

/** JSON has no dates: ISO strings under date-like keys become Date objects. */
function revive(value: unknown, key = ""): unknown {
  if (typeof value === "string" && /^(date|resetAt|at)$/.test(key) && !Number.isNaN(Date.parse(value))) return new Date(value);
  if (Array.isArray(value)) return value.map((v) => revive(v));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, revive(v, k)]));
  }
  return value;
}

function argsOf(req: HubRequest, fn: string): unknown[] {
  const body = req.body;
  if (body && Array.isArray(body.args)) return body.args.map((a, i) => (fn === "setClock" && i === 0 ? new Date(String(a)) : revive(a)));
  return body === undefined ? [] : [revive(body)];
}

async function call(target: Record<string, unknown>, fn: string, args: unknown[]) {
  const f = target[fn];
  if (typeof f !== "function") throw new HubError(404, "Not Found");
  try {
    const result = await (f as (...a: unknown[]) => unknown).apply(target, args);
    return { status: 200, body: { result: result ?? null } };
  } catch (err) {
    throw new HubError(422, err instanceof Error ? err.message : String(err));
  }
}

export function installControlRoutes(hub: SandboxHub, router: RouteTable, control: Control, domains: Record<string, unknown>): void {
  const open = { auth: "none" as const };
  router.add("POST", "/_sandbox/control/{fn}", (req) => {
    const fn = req.params.fn!;
    if (!CONTROL_FUNCTIONS.has(fn)) throw new HubError(404, "Not Found");
    return call(control as unknown as Record<string, unknown>, fn, argsOf(req, fn));
  }, open);
  router.add("POST", "/_sandbox/domains/{domain}/{fn}", (req) => {
    const target = domains[req.params.domain!];
    if (!target || typeof target !== "object") throw new HubError(404, "Not Found");
    return call(target as Record<string, unknown>, req.params.fn!, argsOf(req, req.params.fn!));
  }, open);
  // The link the start banner prints: what this surface offers, so a person can find their way.
  const index = () => ({
    status: 200,
    body: {
      about: "Sandbox hub control surface: a local simulation of the GitHub API (docs/sandbox.md)",
      control: [...CONTROL_FUNCTIONS].map((fn) => `POST /_sandbox/control/${fn}`),
      domains: Object.keys(domains).map((d) => `POST /_sandbox/domains/${d}/{fn}`),
      inspect: ["/_sandbox/deliveries", "/_sandbox/requests", "/_sandbox/effects", "/_sandbox/clock", "/_sandbox/rate-limits", "/_sandbox/domains"].map((p) => `GET ${p}`),
    },
  });
  router.add("GET", "/_sandbox", index, open);
  router.add("GET", "/_sandbox/", index, open);
  router.add("GET", "/_sandbox/domains", () => ({ status: 200, body: Object.keys(domains) }), open);
  router.add("GET", "/_sandbox/deliveries", () => ({ status: 200, body: control.deliveries() }), open);
  router.add("GET", "/_sandbox/requests", () => ({ status: 200, body: control.requests() }), open);
  router.add("GET", "/_sandbox/effects", () => ({ status: 200, body: control.effects }), open);
  router.add("GET", "/_sandbox/clock", () => ({ status: 200, body: { now: hub.timestamp() } }), open);
  router.add("GET", "/_sandbox/rate-limits", () => ({ status: 200, body: hub.rateLimiter.snapshot() }), open);
}
