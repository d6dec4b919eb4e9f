// `npm ci` prints no engine warning on a supported Node: every package the lockfile installs on
// Linux accepts the lowest version of each line Steward's own `engines` names (npm warns,
// EBADENGINE, for any package in the tree whose `engines.node` the running Node does not satisfy).
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";

const ROOT = resolve(__dirname, "../..");
// npm's own range semantics (semver is in every npm tree; no types of its own here).
const semver = createRequire(import.meta.url)("semver") as { satisfies(version: string, range: string): boolean };

type Entry = {
  version?: string;
  engines?: { node?: string } | string[];
  os?: string[];
  cpu?: string[];
  dev?: boolean;
  optional?: boolean;
};
const pkg = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(resolve(ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, Entry>;
};

/** The lowest version of each line `engines` names: "^22.13 || ^24 || ^26" -> 22.13.0, 24.0.0, 26.0.0. */
const supported = pkg.engines.node.split("||").map((part) => {
  const m = /^\s*\^(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(part);
  if (!m) throw new Error(`engines part "${part}" is not a ^MAJOR[.MINOR] range`);
  return `${m[1]}.${m[2] ?? 0}.${m[3] ?? 0}`;
});

/**
 * Packages whose engines are known not to hold and why; each one makes `npm ci` print a warning.
 * probot-stale 1.1.0 (a dev dependency: a published Probot app of 2018 that the isolation tests
 * load on purpose) declares node ^7.7, which no maintained Node satisfies.
 */
const KNOWN = new Set(["node_modules/probot-stale"]);

const installedOnLinux = (e: Entry) => (!e.os || e.os.includes("linux")) && (!e.cpu || e.cpu.includes("x64"));

describe("engines", () => {
  it("names LTS lines from 22 on", () => {
    expect(supported).toEqual(["22.13.0", "24.0.0", "26.0.0"]);
  });

  for (const version of supported) {
    it(`every installed package accepts Node ${version}`, () => {
      const refusing = Object.entries(lock.packages)
        .filter(([path, e]) => path !== "" && !KNOWN.has(path) && installedOnLinux(e))
        .filter(([, e]) => typeof e.engines === "object" && !Array.isArray(e.engines) && e.engines.node !== undefined)
        .filter(([, e]) => !semver.satisfies(version, (e.engines as { node: string }).node))
        .map(([path, e]) => `${path}@${e.version} needs node ${(e.engines as { node: string }).node}`);
      expect(refusing).toEqual([]);
    });
  }
});
