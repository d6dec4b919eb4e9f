// The control surface over HTTP under `/_sandbox/`: the same functions as `Control`
// (and each domain's control object), for the demo and for handler authors in any language.
import { Control } from "./control.js";
import type { RouteTable } from "./core/router.js";
import { HubError, type DeliveryRecord, type HubRequest } from "./core/types.js";
import type { SandboxHub } from "./sandbox-hub.js";

/** Helpers of `Control` that are not part of its documented surface. */
const INTERNAL = new Set(["constructor", "requireInstallation"]);

/**
 * Every public member of `Control` (methods and the `effects` getter), read from the class itself so a
 * function added there (and documented in the README) is callable over HTTP without a second list to keep.
 */
const CONTROL_FUNCTIONS = new Set(Object.getOwnPropertyNames(Control.prototype).filter((name) => !INTERNAL.has(name)));

/** Longest `waitForDeliveries` wait over HTTP, so a forgotten call does not hold a connection for long. */
const MAX_WAIT_MS = 60_000;

/**
 * JSON has no functions: over HTTP `waitForDeliveries` takes a pattern (`{ "event": "issues", "action": "opened" }`)
 * that a delivery matches when each given field is equal, and answers the matching deliveries.
 */
function deliveryPattern(value: unknown): (d: DeliveryRecord) => boolean {
  const pattern = value && typeof value === "object" ? (value as Record<string, unknown>) : {};
  return (d) => Object.entries(pattern).every(([k, v]) => (d as unknown as Record<string, unknown>)[k] === v);
}

/** JSON has no dates: ISO strings under date-like keys become Date objects. */
function revive(value: unknown, key = ""): unknown {
  if (typeof value === "string" && /^(date|resetAt|at)$/.test(key) && !Number.isNaN(Date.parse(value)))
    return new Date(value);
  if (Array.isArray(value)) return value.map((v) => revive(v));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, revive(v, k)]));
  }
  return value;
}

function argsOf(req: HubRequest, fn: string): unknown[] {
  const body = req.body;
  const args =
    body && Array.isArray(body.args)
      ? body.args.map((a, i) => (fn === "setClock" && i === 0 ? new Date(String(a)) : revive(a)))
      : body === undefined
        ? []
        : [revive(body)];
  if (fn === "waitForDeliveries") {
    const opts = (args[1] && typeof args[1] === "object" ? args[1] : {}) as { count?: number; timeoutMs?: number };
    return [
      deliveryPattern(args[0]),
      { ...opts, timeoutMs: Math.min(Number(opts.timeoutMs ?? 10_000) || 10_000, MAX_WAIT_MS) },
    ];
  }
  return args;
}

async function call(target: Record<string, unknown>, fn: string, args: unknown[], values = false) {
  const f = target[fn];
  if (typeof f !== "function") {
    // On `Control` (only there, where the list is its public members) a getter (`effects`) answers its value.
    if (!values || f === undefined) throw new HubError(404, "Not Found");
    return { status: 200, body: { result: f ?? null } };
  }
  try {
    const result = await (f as (...a: unknown[]) => unknown).apply(target, args);
    return { status: 200, body: { result: result ?? null } };
  } catch (err) {
    throw new HubError(422, err instanceof Error ? err.message : String(err));
  }
}

export function installControlRoutes(
  hub: SandboxHub,
  router: RouteTable,
  control: Control,
  domains: Record<string, unknown>,
): void {
  const open = { auth: "none" as const };
  router.add(
    "POST",
    "/_sandbox/control/{fn}",
    (req) => {
      const fn = req.params.fn!;
      if (!CONTROL_FUNCTIONS.has(fn)) throw new HubError(404, "Not Found");
      return call(control as unknown as Record<string, unknown>, fn, argsOf(req, fn), true);
    },
    open,
  );
  router.add(
    "POST",
    "/_sandbox/domains/{domain}/{fn}",
    (req) => {
      const target = domains[req.params.domain!];
      if (!target || typeof target !== "object") throw new HubError(404, "Not Found");
      return call(target as Record<string, unknown>, req.params.fn!, argsOf(req, req.params.fn!));
    },
    open,
  );
  // The link the start banner prints: what this surface offers, so a person can find their way.
  const index = () => ({
    status: 200,
    body: {
      about: "Sandbox hub control surface: a local simulation of the GitHub API (docs/sandbox.md)",
      control: [...CONTROL_FUNCTIONS].map((fn) => `POST /_sandbox/control/${fn}`),
      domains: Object.keys(domains).map((d) => `POST /_sandbox/domains/${d}/{fn}`),
      inspect: [
        "/_sandbox/deliveries",
        "/_sandbox/requests",
        "/_sandbox/effects",
        "/_sandbox/clock",
        "/_sandbox/rate-limits",
        "/_sandbox/domains",
      ].map((p) => `GET ${p}`),
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
