// compose.yaml, .env.example, the Dockerfile and .dockerignore hold what Steward's promises need:
// checked from the files themselves (no container engine here), and with `docker compose config`
// where a compose client is installed.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse } from "yaml";
import { loadConfig } from "../../src/config/env.js";
import { isSettingName } from "../../src/config/setting-names.js";

const ROOT = resolve(__dirname, "../..");
const read = (file: string) => readFileSync(resolve(ROOT, file), "utf8");

type Service = {
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  depends_on?: Record<string, { condition: string }>;
  read_only?: boolean;
  cap_drop?: string[];
  secrets?: string[];
};
const compose = parse(read("compose.yaml")) as {
  services: Record<string, Service>;
  secrets: Record<string, { file: string }>;
};
const dockerfile = read("Dockerfile");

/** Steward's default shutdown bound, from the configuration code itself. */
function defaultShutdownMs(): number {
  const { privateKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  return loadConfig({ APP_ID: "1", PRIVATE_KEY: privateKey, WEBHOOK_SECRET: "s" }).shutdownTimeoutMs;
}
const seconds = (d: string) => Number(/^(\d+)s$/.exec(d)?.[1] ?? NaN);

describe("compose.yaml", () => {
  const steward = compose.services.steward!;
  const redis = compose.services.redis!;

  it("runs Redis as Steward's store needs it: append-only, synced every second, never evicting", () => {
    const args = redis.command!.join(" ");
    expect(args).toMatch(/--appendonly yes\b/);
    expect(args).toMatch(/--appendfsync everysec\b/);
    expect(args).toMatch(/--maxmemory-policy noeviction\b/);
    expect(redis.volumes!.some((v) => v.endsWith(":/data"))).toBe(true);
    expect(steward.environment!.STEWARD_REDIS_URL).toBe("redis://redis:6379/0");
    expect(steward.depends_on!.redis!.condition).toBe("service_healthy");
  });

  it("keeps Steward's data in a volume at the image's data directory, on a read-only root, with a grace period above the shutdown bound", () => {
    const volume = /^VOLUME \["([^"]+)"\]$/m.exec(dockerfile)![1]!;
    expect(steward.environment!.STEWARD_DATA_DIR).toBe(volume);
    expect(steward.volumes).toContain(`steward-data:${volume}`);
    expect(steward.read_only).toBe(true);
    expect(steward.cap_drop).toEqual(["ALL"]);
    // The service exits at the latest 5 s past its bound (src/cli/commands/start.ts).
    expect(seconds(steward.stop_grace_period!) * 1000).toBeGreaterThan(defaultShutdownMs() + 5_000);
    expect(steward.healthcheck!.test.join(" ")).toContain("/readyz");
    expect(steward.environment!.PRIVATE_KEY_PATH).toBe(`/run/secrets/${steward.secrets![0]}`);
  });

  it(".env.example names only Steward's settings and holds no secret", () => {
    const lines = read(".env.example")
      .split("\n")
      .filter((l) => /^[A-Z_]+=/.test(l));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      const [name, value] = line.split("=", 2) as [string, string];
      expect(isSettingName(name), name).toBe(true);
      if (/SECRET|KEY|TOKEN/.test(name)) expect(value, name).toBe("");
    }
  });

  it("passes `docker compose config` where a compose client is installed", (ctx) => {
    const probe = spawnSync("docker", ["compose", "version"], { encoding: "utf8" });
    if (probe.error || probe.status !== 0) ctx.skip();
    const env = { ...process.env, APP_ID: "1", WEBHOOK_SECRET: "x" };
    const out = spawnSync(
      "docker",
      ["compose", "--env-file", ".env.example", "-f", "compose.yaml", "config", "--no-interpolate", "--quiet"],
      { cwd: ROOT, encoding: "utf8", env },
    );
    expect(out.status, out.stderr).toBe(0);
  });
});

describe("Dockerfile and .dockerignore", () => {
  it("builds on a base pinned by digest, runs as a non-root user, node directly, with a health check", () => {
    const froms = [...dockerfile.matchAll(/^ARG NODE_IMAGE=(\S+)$/gm)].map((m) => m[1]!);
    expect(froms).toHaveLength(1);
    expect(froms[0]).toMatch(/^node:24-bookworm-slim@sha256:[0-9a-f]{64}$/);
    expect([...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1])).toEqual(["${NODE_IMAGE}", "${NODE_IMAGE}"]);
    const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).toMatch(/NODE_ENV=production/);
    expect(runtime).toMatch(/^ENTRYPOINT \["node", "bin\/steward\.js"\]$/m);
    expect(runtime).toMatch(/^CMD \["start"\]$/m);
    expect(runtime).toMatch(/^HEALTHCHECK .*\n\s+CMD \["node", "-e", ".*\/healthz/m);
    expect(runtime).not.toMatch(/npm (start|run)/);
    // The runtime stage takes the pruned production tree from the build stage, never installs dev dependencies.
    expect(runtime).not.toMatch(/npm (ci|install)/);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
  });

  it("keeps .env, the data directory, keys, node_modules, dist and .git out of the build context", () => {
    const ignored = read(".dockerignore")
      .split("\n")
      .map((l) => l.trim());
    for (const entry of [".env", ".env.*", "*.pem", ".steward/", "node_modules/", "dist/", ".git/"])
      expect(ignored).toContain(entry);
  });
});
