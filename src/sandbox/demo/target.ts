// Where a demo scenario plays: the sandbox stack in this process (`steward demo`), or a sandbox
// already running in another (`steward demo --into URL`), driven through the hub's control surface
// over HTTP so that process's console and store show what happened. A scenario written against
// this target calls the hub's control and domain functions by name and waits with `settle`.
import type { SandboxStack } from "../stack.js";

export interface DemoTarget {
  /** Where it plays, for the lines the demo prints. */
  hubUrl: string;
  stewardUrl: string;
  /** A control function of the hub (`pushFiles`, `openPullRequest`, `deliveries`, ...). */
  control<T = any>(fn: string, ...args: unknown[]): Promise<T>;
  /** A function of one of the hub's domains (`actions.startRun`, `checks.checkRuns`, ...). */
  domain<T = any>(domain: string, fn: string, ...args: unknown[]): Promise<T>;
  /** Until the hub has sent what is due and Steward has handled every delivery it recorded. */
  settle(): Promise<void>;
}

/** The stack in this process: direct calls, and Steward's own engine to wait on. */
export function stackTarget(stack: SandboxStack): DemoTarget {
  const { control, domains } = stack.hub;
  return {
    hubUrl: stack.hub.url,
    stewardUrl: stack.steward.url,
    control: async (fn, ...args) => {
      const member = (control as unknown as Record<string, unknown>)[fn];
      return (typeof member === "function" ? await member.apply(control, args) : member) as never;
    },
    domain: async (name, fn, ...args) => {
      const target = (domains as unknown as Record<string, Record<string, (...a: unknown[]) => unknown>>)[name]!;
      return (await target[fn]!.apply(target, args)) as never;
    },
    async settle() {
      await domains.idle();
      await control.settled();
      await stack.steward.engine.idle();
      await domains.idle();
      await control.settled();
    },
  };
}

/** Longest a remote `settle` waits for Steward's queue to empty (a handler retrying with backoff may hold it). */
const REMOTE_SETTLE_MS = 120_000;

async function post(url: string, args: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ args }),
  });
  const body = (await res.json().catch(() => ({}))) as { result?: unknown; message?: string };
  if (!res.ok) throw new Error(`${new URL(url).pathname}: ${res.status} ${body.message ?? ""}`.trim());
  return body.result;
}

/** Deliveries Steward holds waiting or running, from its /metrics (undefined when it does not answer). */
async function queueDepth(stewardUrl: string): Promise<number | undefined> {
  try {
    const text = await (await fetch(`${stewardUrl}/metrics`)).text();
    const m = /^steward_queue_depth (\d+)/m.exec(text);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A sandbox running in another process, reached at its hub's URL (or its control surface,
 * `<hub>/_sandbox/`). Steward's address is where the hub sends deliveries; waiting for Steward is
 * waiting for its queue (`steward_queue_depth` on /metrics) to be empty.
 */
export async function remoteTarget(url: string): Promise<DemoTarget> {
  const hubUrl = url.replace(/\/_sandbox\/?.*$/, "").replace(/\/+$/, "");
  const control = <T>(fn: string, ...args: unknown[]) => post(`${hubUrl}/_sandbox/control/${fn}`, args) as Promise<T>;
  let hook: string | null;
  try {
    hook = await control<string | null>("webhookUrl");
  } catch (e) {
    throw new Error(`no sandbox hub's control surface answers at ${hubUrl}/_sandbox/ (${(e as Error).message})`);
  }
  if (!hook) throw new Error(`the sandbox hub at ${hubUrl} sends deliveries nowhere: no Steward to play into`);
  const stewardUrl = new URL(hook).origin;
  return {
    hubUrl,
    stewardUrl,
    control,
    domain: (name, fn, ...args) => post(`${hubUrl}/_sandbox/domains/${name}/${fn}`, args) as Promise<never>,
    async settle() {
      await control("settled");
      const deadline = Date.now() + REMOTE_SETTLE_MS;
      while (Date.now() < deadline && (await queueDepth(stewardUrl)) !== 0)
        await new Promise((r) => setTimeout(r, 100));
      await control("settled");
    },
  };
}
