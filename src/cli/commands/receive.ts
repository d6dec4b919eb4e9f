// `steward receive --event E --payload FILE`: push one webhook payload (a fixture, a payload
// copied from GitHub's delivery log) through the configured handlers once, in this process,
// and print each handler's outcome. With APP_ID set the handlers call GITHUB_API_URL as the
// real app; with no APP_ID they run against an in-process sandbox hub. Either way the run uses
// a throw-away data directory and no Redis, so it never touches a running service's queue.
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AppGrant, HubHandle } from "@steward/sandbox-hub";
import type { Steward } from "../../app.js";
import type { IncomingDelivery } from "../../store/records.js";

export const usage = `usage: steward receive -e EVENT -p FILE [APP...]
       steward receive --event EVENT --payload FILE [APP...]
  Runs the payload in FILE (JSON) as one delivery of EVENT (the X-GitHub-Event name, e.g. issues;
  the action comes from the payload) once, and prints each handler's outcome. Exits 1 when a
  handler failed. With APP paths (Probot apps or handler modules, as \`probot receive\`), those
  apps run and the built-in handlers stay off (STEWARD_BUILTIN_HANDLERS decides when set); without,
  the configured handlers (built-in and STEWARD_HANDLERS).
  With APP_ID set: as the real app against GITHUB_API_URL. Without: against an in-process sandbox
  hub, where the payload's installation id becomes the sandbox's, and the repository, issue and
  pull request it names are created first (each printed), so a fixture from GitHub's examples works.`;

type Args = { event: string; payload: string; apps: string[] };

function parseArgs(args: string[]): Args | string {
  let event = "";
  let payload = "";
  const apps: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--event" || a === "-e") event = args[++i] ?? "";
    else if (a.startsWith("--event=")) event = a.slice(8);
    else if (a === "--payload" || a === "-p") payload = args[++i] ?? "";
    else if (a.startsWith("--payload=")) payload = a.slice(10);
    else if (!a.startsWith("-")) apps.push(a);
    else return `steward receive: unexpected argument ${a}\n${usage}`;
  }
  if (!/^[a-z_]+$/.test(event))
    return `steward receive: --event needs an event name such as issues or pull_request\n${usage}`;
  if (!payload) return `steward receive: --payload needs a JSON file\n${usage}`;
  for (const app of apps)
    if (!existsSync(resolve(app))) return `steward receive: no such file: ${app} (${resolve(app)})`;
  return { event, payload, apps };
}

async function readPayload(file: string): Promise<Record<string, unknown> | string> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    return `steward receive: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      return `steward receive: ${file} is not a JSON object`;
    return parsed as Record<string, unknown>;
  } catch (e) {
    return `steward receive: ${file} is not valid JSON: ${(e as Error).message}`;
  }
}

function deliveryOf(event: string, payload: Record<string, unknown>): IncomingDelivery {
  const id = randomUUID();
  const installation = payload.installation as { id?: unknown } | undefined;
  const repository = payload.repository as { full_name?: unknown } | undefined;
  return {
    id,
    event,
    action: typeof payload.action === "string" ? payload.action : undefined,
    installationId: typeof installation?.id === "number" ? installation.id : undefined,
    repository: typeof repository?.full_name === "string" ? repository.full_name : undefined,
    headers: {
      "x-github-event": event,
      "x-github-delivery": id,
      "user-agent": "steward-receive",
      "content-type": "application/json",
    },
    payload: JSON.stringify(payload),
    receivedAt: new Date(),
  };
}

/** Steward on a throw-away data directory: one attempt, no Redis, any free port on loopback. */
async function startLocal(
  dataDir: string,
  baseEnv: NodeJS.ProcessEnv,
): Promise<{ steward: Steward; hub?: HubHandle; close(): Promise<void> }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(baseEnv))
    if (v !== undefined && k !== "STEWARD_REDIS_URL" && k !== "STEWARD_POSTGRES_URL") env[k] = v;
  Object.assign(env, { PORT: "0", HOST: "127.0.0.1", STEWARD_DATA_DIR: dataDir, STEWARD_MAX_ATTEMPTS: "1" });
  if (env.APP_ID) {
    const [{ loadConfig }, { createSteward }] = await Promise.all([
      import("../../config/env.js"),
      import("../../app.js"),
    ]);
    const steward = await createSteward({ config: loadConfig(env) });
    return { steward, close: () => steward.close() };
  }
  const [{ startSandboxStack }, { sandboxGrant }, { loadBuiltinHandlers, loadHandlerPaths }] = await Promise.all([
    import("../../sandbox/stack.js"),
    import("../../sandbox/hub.js"),
    import("../../config/env.js"),
  ]);
  const kept = Object.fromEntries(Object.entries(env).filter(([k]) => /^STEWARD_/.test(k) || k === "LOG_LEVEL"));
  const app = sandboxGrant({ builtins: loadBuiltinHandlers(env), modulePaths: loadHandlerPaths(env) });
  const stack = await startSandboxStack({ dataDir, hub: { app }, env: { LOG_LEVEL: "warn", ...kept } });
  // One delivery, the payload's: what the hub would send about the objects made for it is not sent.
  stack.hub.control.setWebhookUrl(undefined);
  return { steward: stack.steward as unknown as Steward, hub: stack.hub, close: () => stack.close() };
}

type Named = { login?: unknown; type?: unknown };

/**
 * Makes the sandbox hold what the payload names, as a fixture from GitHub's examples expects of
 * GitHub: the repository (its owner too) with the app installed on it, a new issue or pull
 * request standing for the payload's, whose numbers the payload then carries, and the sandbox's
 * installation id. Returns one line per change; throws naming an object it cannot make.
 */
function prepareSandbox(hub: HubHandle, payload: Record<string, unknown>, grant: AppGrant): string[] {
  const done: string[] = [];
  const repository = payload.repository as { name?: unknown; owner?: Named; private?: unknown } | undefined;
  const owner = typeof repository?.owner?.login === "string" ? repository.owner.login : undefined;
  const name = typeof repository?.name === "string" ? repository.name : undefined;
  if (!owner || !name) return done;
  const control = hub.control;
  if (!control.repo(owner, name)) {
    try {
      if (!control.installation(owner)) {
        if (repository?.owner?.type === "User") control.createUser(owner);
        else control.createOrg(owner);
      }
    } catch {
      // The account exists already (a user or an organisation): the repository goes under it.
    }
    try {
      control.createRepo({ owner, name, private: repository?.private === true });
    } catch (e) {
      throw new Error(
        `the payload's repository ${owner}/${name} could not be made in the sandbox: ${(e as Error).message}`,
      );
    }
    done.push(`made repository ${owner}/${name}`);
  }
  let installation = control.installation(owner);
  if (!installation) {
    installation = control.install(owner, {
      repositories: "all",
      permissions: grant.permissions,
      events: grant.events,
    });
    done.push(`installed the app on ${owner}`);
  }
  const given = (payload.installation as { id?: unknown } | undefined)?.id;
  payload.installation = { ...((payload.installation as object | undefined) ?? {}), id: installation.id };
  if (given !== installation.id)
    done.push(`installation ${String(given ?? "(none)")} -> ${installation.id} (the sandbox's)`);

  const issue = payload.issue as
    { number?: unknown; title?: unknown; body?: unknown; pull_request?: unknown } | undefined;
  const pull = payload.pull_request as
    | {
        number?: unknown;
        title?: unknown;
        body?: unknown;
        head?: { ref?: unknown; sha?: unknown };
        base?: { ref?: unknown };
      }
    | undefined;
  if (pull && typeof pull.number === "number") {
    const head = typeof pull.head?.ref === "string" ? pull.head.ref : `receive-${pull.number}`;
    let made;
    try {
      made = control.openPullRequest({
        owner,
        repo: name,
        head,
        files: { [`${head}.txt`]: `${head}\n` },
        title: typeof pull.title === "string" ? pull.title : `Pull request #${pull.number}`,
      });
    } catch (e) {
      throw new Error(
        `the payload's pull request #${pull.number} (${owner}/${name}, head ${head}) could not be made in the sandbox: ${(e as Error).message}`,
      );
    }
    done.push(`opened pull request #${made.number} for the payload's #${pull.number}`);
    payload.pull_request = {
      ...pull,
      number: made.number,
      head: { ...(pull.head ?? {}), ref: head, sha: made.head_sha },
    };
    if (typeof payload.number === "number") payload.number = made.number;
    if (issue && typeof issue.number === "number") payload.issue = { ...issue, number: made.number };
  } else if (issue && typeof issue.number === "number") {
    let made;
    try {
      made = control.openIssue({
        owner,
        repo: name,
        title: typeof issue.title === "string" ? issue.title : `Issue #${issue.number}`,
        ...(typeof issue.body === "string" ? { body: issue.body } : {}),
      });
    } catch (e) {
      throw new Error(
        `the payload's issue #${issue.number} (${owner}/${name}) could not be made in the sandbox: ${(e as Error).message}`,
      );
    }
    done.push(`opened issue #${made.number} for the payload's #${issue.number}`);
    payload.issue = { ...issue, number: made.number };
  }
  return done;
}

export async function run(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = parseArgs(args);
  if (typeof parsed === "string") {
    process.stderr.write(`${parsed}\n`);
    return 2;
  }
  const payload = await readPayload(parsed.payload);
  if (typeof payload === "string") {
    process.stderr.write(`${payload}\n`);
    return 1;
  }
  const runEnv: NodeJS.ProcessEnv =
    parsed.apps.length === 0
      ? env
      : {
          ...env,
          STEWARD_HANDLERS: [...(env.STEWARD_HANDLERS ?? "").split(",").filter((p) => p.trim()), ...parsed.apps].join(
            ",",
          ),
          STEWARD_BUILTIN_HANDLERS: env.STEWARD_BUILTIN_HANDLERS?.trim() || "none",
        };
  const dataDir = await mkdtemp(join(tmpdir(), "steward-receive-"));
  try {
    const local = await startLocal(dataDir, runEnv);
    try {
      if (local.hub) {
        const { sandboxGrant } = await import("../../sandbox/hub.js");
        const { loadBuiltinHandlers, loadHandlerPaths } = await import("../../config/env.js");
        let made: string[];
        try {
          made = prepareSandbox(
            local.hub,
            payload,
            sandboxGrant({ builtins: loadBuiltinHandlers(runEnv), modulePaths: loadHandlerPaths(runEnv) }),
          );
        } catch (e) {
          process.stderr.write(`steward receive: ${(e as Error).message}\n`);
          return 1;
        }
        for (const line of made) process.stdout.write(`sandbox: ${line}\n`);
      }
      const delivery = deliveryOf(parsed.event, payload);
      await local.steward.engine.intake.record(delivery);
      await local.steward.engine.idle();
      const outcomes = (await local.steward.store.deliveries.getDelivery(delivery.id))?.outcomes ?? [];
      const label = delivery.action ? `${delivery.event}.${delivery.action}` : delivery.event;
      if (outcomes.length === 0) process.stdout.write(`${label}: no handler listens to this event\n`);
      for (const o of outcomes) process.stdout.write(`${o.handler}: ${o.status}${o.detail ? ` (${o.detail})` : ""}\n`);
      return outcomes.some((o) => o.status === "failed") ? 1 : 0;
    } finally {
      await local.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
