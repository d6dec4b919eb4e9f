// The container image's runtime, as far as a machine without a container engine can run it: the
// runtime stage's tree (scripts/assemble-runtime.mjs, the Dockerfile's COPY lines), started the way
// the image starts it (`node bin/steward.js start`, no npm, no shell left), as a non-root user, with
// the root filesystem read-only but for the data directory, as PID 1 of its own PID namespace.
import { describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { chmod, chown, mkdir, readFile, readlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { examples } from "../support/webhook-examples.js";
import { assembleRuntime } from "../../scripts/assemble-runtime.mjs";
import { deliveryId, postDelivery } from "../service/helpers.js";
import { perTest } from "../service/per-test.js";

const ROOT = resolve(__dirname, "../..");
const NOBODY = 65534;
const SHUTDOWN_TIMEOUT_S = 5;
/** start.ts: past STEWARD_SHUTDOWN_TIMEOUT the process exits regardless within this margin. */
const EXIT_MARGIN_S = 5;

/** Why this cannot run here, or undefined when it can. */
function cannotRun(): string | undefined {
  if (process.platform !== "linux") return "needs Linux namespaces";
  if (process.getuid?.() !== 0) return "needs root (to make PID and mount namespaces and drop to an unprivileged user)";
  const probe = spawnSync(
    "unshare",
    [
      "--pid",
      "--fork",
      "--mount-proc",
      "--mount",
      "sh",
      "-c",
      "mount -o remount,bind,ro / && exec setpriv --reuid=65534 --regid=65534 --clear-groups true",
    ],
    { encoding: "utf8" },
  );
  if (probe.error || probe.status !== 0)
    return `unshare/setpriv not permitted here: ${probe.error?.message ?? probe.stderr.trim()}`;
  return undefined;
}
const reason = cannotRun();
if (reason) console.warn(`test/deploy/container.test.ts skipped: ${reason}`);

const scope = perTest();

/** Runs `command` as PID 1 of a new PID namespace, / read-only except `writable`, as nobody. */
function contained(command: string[], opts: { cwd: string; writable: string; env: Record<string, string> }) {
  const script =
    'mount --bind "$W" "$W" && mount -o remount,bind,ro / && exec setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs "$@"';
  const proc = spawn("unshare", ["--pid", "--fork", "--mount-proc", "--mount", "sh", "-c", script, "sh", ...command], {
    cwd: opts.cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", W: opts.writable, ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d.toString()));
  proc.stderr!.on("data", (d) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on("close", (code) => r(code)));
  scope.stopAfter(proc, (p) => p.exitCode === null && p.kill("SIGKILL"));
  return { proc, exited, out: () => out };
}

/**
 * The host pid of the namespace's PID 1 (unshare's forked child), once it has exec'd node (known by
 * its executable: Node 24 and later rename the main thread, so /proc/PID/comm is not "node").
 */
async function namespaceInit(unsharePid: number): Promise<number> {
  const node = realpathSync(process.execPath);
  for (let i = 0; i < 600; i++) {
    const children = (await readFile(`/proc/${unsharePid}/task/${unsharePid}/children`, "utf8").catch(() => "")).trim();
    const pid = Number(children.split(" ")[0]);
    if (pid && (await readlink(`/proc/${pid}/exe`).catch(() => "")) === node) return pid;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no node under unshare ${unsharePid}`);
}

describe.skipIf(reason !== undefined)("the runtime image's tree, contained", () => {
  it("PID 1 without its own handlers ignores SIGTERM (why Steward installs them)", { timeout: 90_000 }, async () => {
    const dir = await scope.dataDir("pid1");
    await chmod(dir, 0o755);
    const run = contained([process.execPath, "-e", "setInterval(() => {}, 1000)"], {
      cwd: dir,
      writable: dir,
      env: {},
    });
    const pid = await namespaceInit(run.proc.pid!);
    process.kill(pid, "SIGTERM");
    await new Promise((r) => setTimeout(r, 1000));
    expect(run.proc.exitCode).toBeNull();
    process.kill(pid, "SIGKILL");
    await run.exited;
  });

  it("starts as nobody with a read-only root, answers /healthz and /readyz, records, and exits 0 on SIGTERM within the bound", async () => {
    const dir = await scope.dataDir("container");
    await chmod(dir, 0o755);
    const app = join(dir, "app");
    assembleRuntime(ROOT, app, { fresh: true });
    const data = join(dir, "data");
    await mkdir(data, { mode: 0o700 });
    await chown(data, NOBODY, NOBODY);
    const hub = await scope.hub();
    const keyPath = join(dir, "app.pem");
    await writeFile(keyPath, hub.env.PRIVATE_KEY, { mode: 0o600 });
    await chown(keyPath, NOBODY, NOBODY);
    const secret = "container-webhook-secret";
    const run = contained([process.execPath, "bin/steward.js", "start"], {
      cwd: app,
      writable: data,
      env: {
        NODE_ENV: "production",
        HOME: "/nonexistent",
        APP_ID: hub.env.APP_ID,
        PRIVATE_KEY_PATH: keyPath,
        WEBHOOK_SECRET: secret,
        GITHUB_API_URL: hub.url,
        HOST: "127.0.0.1",
        PORT: "0",
        STEWARD_DATA_DIR: data,
        STEWARD_SHUTDOWN_TIMEOUT: `${SHUTDOWN_TIMEOUT_S}s`,
        LOG_LEVEL: "info",
      },
    });
    const url = await new Promise<string>((resolve, reject) => {
      run.proc.stdout!.on("data", () => {
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(run.out());
        if (m) resolve(m[1]!);
      });
      void run.exited.then((code) => reject(new Error(`exited ${code}: ${run.out()}`)));
    });
    const pid = await namespaceInit(run.proc.pid!);
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    expect(status).toMatch(/^NSpid:\s+\d+\s+1$/m); // PID 1 in its namespace
    expect(status).toMatch(new RegExp(`^Uid:\\s+${NOBODY}\\s+${NOBODY}\\s+${NOBODY}\\s+${NOBODY}$`, "m"));
    const mounts = await readFile(`/proc/${pid}/mountinfo`, "utf8");
    const options = (point: string) =>
      mounts
        .split("\n")
        .find((l) => l.split(" ")[4] === point)
        ?.split(" ")[5] ?? "";
    expect(options("/").split(",")).toContain("ro");
    expect(options(data).split(",")).toContain("rw");

    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const ping = JSON.stringify(
      (examples as { name: string; examples: unknown[] }[]).find((e) => e.name === "ping")!.examples[0],
    );
    expect((await postDelivery(url, { body: ping, secret, event: "ping", id: deliveryId() })).status).toBe(202);

    const stopAt = Date.now();
    process.kill(pid, "SIGTERM");
    // Exit code 0 means the shutdown ended by itself, not by the watchdog at the bound (exit 1).
    expect(await run.exited).toBe(0);
    expect(Date.now() - stopAt).toBeLessThan((SHUTDOWN_TIMEOUT_S + EXIT_MARGIN_S) * 1000);
    expect(run.out()).toContain("shut down");
    expect(run.out()).not.toContain("EROFS");
  }, 120_000);
});
