// What the operator exposes to each organisation's secrets policy: `STEWARD_SECRET_SOURCES`.
//
//   STEWARD_SECRET_SOURCES="acme=env:ACME_SECRET_,file:/run/steward/acme; globex=env:GLOBEX_"
//
// Entries are separated by `;` or newlines; each names an organisation (the installation's
// account, case-insensitive) and what its policy may read: `env:PREFIX` (environment variables
// whose names start with PREFIX) and `file:/dir` (regular files below that directory, symbolic
// links resolved first). Nothing is exposed by default, and one organisation never reads what is
// exposed to another. Steward's own settings are never exposed (see setting-names.ts).

export const SOURCES_VARIABLE = "STEWARD_SECRET_SOURCES";

export interface Exposure {
  envPrefixes: string[];
  dirs: string[];
}

export type ParsedExposures = { ok: true; byOrg: Map<string, Exposure> } | { ok: false; error: string };

const NOTHING: Exposure = { envPrefixes: [], dirs: [] };

/** Parses the variable; a malformed value exposes nothing, with an error naming the entry (never a value). */
export function parseExposures(raw: string | undefined): ParsedExposures {
  const byOrg = new Map<string, Exposure>();
  const entries = (raw ?? "")
    .split(/[;\n]/)
    .map((e) => e.trim())
    .filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const bad = (why: string): ParsedExposures => ({ ok: false, error: `${SOURCES_VARIABLE} entry ${i + 1}: ${why}` });
    const eq = entry.indexOf("=");
    if (eq <= 0) return bad("must be ORG=env:PREFIX,file:/dir");
    const org = entry.slice(0, eq).trim().toLowerCase();
    if (!/^[a-z0-9][a-z0-9-]*$/.test(org)) return bad("the organisation must be an account login");
    const exposure = byOrg.get(org) ?? { envPrefixes: [], dirs: [] };
    for (const item of entry
      .slice(eq + 1)
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean)) {
      const env = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(item);
      const dir = /^file:(\/.*)$/.exec(item);
      if (env) exposure.envPrefixes.push(env[1]!);
      else if (dir) {
        if (dir[1] === "/") return bad("file:/ would expose every file on the host; name a directory");
        exposure.dirs.push(dir[1]!.replace(/\/+$/, ""));
      } else return bad("each exposure must be env:PREFIX or file:/directory");
    }
    byOrg.set(org, exposure);
  }
  return { ok: true, byOrg };
}

/** What `org` may read: nothing unless the operator exposed something to it. */
export function exposureFor(parsed: ParsedExposures, org: string): Exposure {
  return parsed.ok ? (parsed.byOrg.get(org.toLowerCase()) ?? NOTHING) : NOTHING;
}
