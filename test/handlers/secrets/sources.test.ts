// Secret sources are confined to what the operator exposes to each organisation
// (STEWARD_SECRET_SOURCES); Steward's own settings, key file, data and credentials are never a
// source; and whatever the reason, an unreadable source gets one answer.
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseExposures } from "../../../handlers/secrets/exposure.js";
import { notAvailable, resolveSource } from "../../../handlers/secrets/sources.js";
import { noteSettingPath } from "../../../src/config/setting-names.js";
import { registerSecret } from "../../../src/log/redact.js";
import { validateFiles } from "../../../src/cli/commands/validate.js";
import secrets from "../../../handlers/secrets/index.js";

let root: string;
let acmeDir: string;
let globexDir: string;
let keyFile: string;
let dataDir: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "steward-sources-"));
  acmeDir = join(root, "acme");
  globexDir = join(root, "globex");
  dataDir = join(acmeDir, "data");
  await mkdir(dataDir, { recursive: true });
  await mkdir(globexDir);
  keyFile = join(root, "app.pem");
  await writeFile(
    keyFile,
    "-----BEGIN PRIVATE KEY-----\nnot-a-real-key-but-steward-s-own\n-----END PRIVATE KEY-----\n",
  );
  await writeFile(join(acmeDir, "deploy_key"), "acme-deploy-key\n");
  await writeFile(join(globexDir, "deploy_key"), "globex-deploy-key\n");
  await writeFile(join(dataDir, "secrets-fingerprint.key"), "fingerprint-key-bytes");
  await symlink(keyFile, join(acmeDir, "innocent_looking"));
  noteSettingPath(keyFile);
  env = {
    // An operator who exposes far too much: still nothing of Steward's own.
    STEWARD_SECRET_SOURCES: `acme=env:ACME_,env:WEBHOOK_,env:STEWARD_,env:PRIVATE_,file:${acmeDir}; globex=env:GLOBEX_,file:${globexDir}`,
    ACME_TOKEN: "acme-token-value",
    ACME_COPY_OF_HOOK: "hook-secret-registered-by-steward",
    GLOBEX_TOKEN: "globex-token-value",
    WEBHOOK_SECRET: "hook-secret-registered-by-steward",
    STEWARD_REVIEWER_TOKEN: "reviewer-token-value",
    STEWARD_DATA_DIR: dataDir,
    PRIVATE_KEY_PATH: keyFile,
    UNEXPOSED: "present-but-unexposed",
  };
  registerSecret(env.WEBHOOK_SECRET);
});

const read = (org: string, from: string) => resolveSource(from, { org, env, dataDir });

describe("secret sources", () => {
  it("resolve what is exposed to the organisation, and only to it", () => {
    expect(read("acme", "env:ACME_TOKEN")).toEqual({ ok: true, value: "acme-token-value" });
    expect(read("ACME", `file:${acmeDir}/deploy_key`)).toEqual({ ok: true, value: "acme-deploy-key" });
    expect(read("globex", "env:GLOBEX_TOKEN")).toEqual({ ok: true, value: "globex-token-value" });
    // One organisation never reads another's.
    expect(read("acme", "env:GLOBEX_TOKEN")).toEqual({ ok: false, error: notAvailable("env:GLOBEX_TOKEN") });
    expect(read("acme", `file:${globexDir}/deploy_key`).ok).toBe(false);
    expect(read("globex", `file:${acmeDir}/deploy_key`).ok).toBe(false);
    expect(read("initech", "env:ACME_TOKEN").ok).toBe(false);
  });

  it("never resolve Steward's own settings, key file, data directory or credentials, however exposed", () => {
    for (const from of [
      "env:WEBHOOK_SECRET",
      "env:STEWARD_REVIEWER_TOKEN",
      "env:STEWARD_DATA_DIR",
      "env:STEWARD_SECRET_SOURCES",
      "env:PRIVATE_KEY_PATH",
      `file:${keyFile}`,
      `file:${acmeDir}/innocent_looking`, // a symbolic link to the key file
      `file:${dataDir}/secrets-fingerprint.key`,
      "env:ACME_COPY_OF_HOOK", // an exposed name whose value is Steward's webhook secret
    ]) {
      expect([from, read("acme", from)]).toEqual([from, { ok: false, error: notAvailable(from) }]);
    }
  });

  it("answer an unexposed name that exists exactly as a name that does not", () => {
    const answer = (from: string) => {
      const r = read("acme", from);
      return r.ok ? "resolved" : r.error.replace(from, "FROM");
    };
    const answers = [
      "env:UNEXPOSED",
      "env:SURELY_NOT_SET_ANYWHERE",
      "env:ACME_NOT_SET",
      `file:${root}/app.pem`,
      `file:${acmeDir}/missing`,
      `file:${acmeDir}`,
      "file:/etc/hostname",
    ].map(answer);
    expect(new Set(answers)).toEqual(new Set([notAvailable("FROM")]));
  });

  it("expose nothing when the configuration is malformed, and say why without echoing values", () => {
    expect(parseExposures("acme")).toEqual({
      ok: false,
      error: "STEWARD_SECRET_SOURCES entry 1: must be ORG=env:PREFIX,file:/dir",
    });
    expect(parseExposures("acme=file:/")).toMatchObject({
      ok: false,
      error: expect.stringMatching(/every file on the host/),
    });
    expect(parseExposures("acme=vault:x")).toMatchObject({ ok: false });
    expect(parseExposures(undefined)).toEqual({ ok: true, byOrg: new Map() });
    expect(
      resolveSource("env:ACME_TOKEN", { org: "acme", env: { ...env, STEWARD_SECRET_SOURCES: "acme=env:ACME_;bad" } })
        .ok,
    ).toBe(false);
  });
});

describe("steward validate and secret sources", () => {
  it("checks source names without values by default; --resolve --account resolves them for that organisation", async () => {
    const file = join(root, "steward", "secrets.yml");
    await mkdir(join(root, "steward"), { recursive: true });
    await writeFile(
      file,
      `secrets:\n  TOKEN: { from: env:ACME_MISSING, repositories: [web] }\n  KEY: { from: file:${acmeDir}/deploy_key, repositories: [web] }\n`,
    );
    const run = async (extra: Record<string, unknown>) => {
      let out = "";
      const code = await validateFiles(
        { files: [file], ...extra },
        [secrets],
        (s) => (out += s),
        () => undefined,
      );
      return { code, out };
    };
    const saved = process.env.STEWARD_SECRET_SOURCES;
    process.env.STEWARD_SECRET_SOURCES = env.STEWARD_SECRET_SOURCES;
    try {
      expect((await run({})).code).toBe(0);
      const resolved = await run({ resolve: true, account: "acme" });
      expect(resolved.code).toBe(1);
      expect(resolved.out).toBe(`${file}:2:18: ${notAvailable("env:ACME_MISSING")}\n`);
      const other = await run({ resolve: true, account: "globex" });
      expect(other.out.split("\n").filter(Boolean)).toHaveLength(2);
    } finally {
      if (saved === undefined) delete process.env.STEWARD_SECRET_SOURCES;
      else process.env.STEWARD_SECRET_SOURCES = saved;
    }
  });
});
