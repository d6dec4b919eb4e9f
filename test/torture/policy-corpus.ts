// A corpus of broken policy files: each valid base file (`.github/steward.yml` and the admin
// secrets document) mutated at every line by operators that break it in one known way —
// syntax, wrong types, unknown keys, bad globs, bad regexes, bad time zones.

export const STEWARD_YML = `rerun:
  enabled: true
  max_attempts: 3
  delay: 30s
  branches: [main, "release/*"]
  rules:
    - jobs: ["integration-*"]
      log: ["ECONNRESET", "/lost communication/i"]
    - runner_lost: true
deployments:
  environments:
    production:
      branches: [main, "v*"]
      checks: [build, test]
      windows:
        - days: [mon, tue, wed, thu, fri]
          hours: "09:00-17:00"
          timezone: Europe/Paris
      freeze:
        - from: 2026-12-20T00:00:00Z
          to: 2027-01-05T00:00:00Z
          reason: year-end freeze
checks:
  config: true
`;

export const SECRETS_YML = `secrets:
  NPM_TOKEN:
    from: env:STEWARD_SECRET_NPM_TOKEN
    org:
      visibility: selected
      repositories: ["web-*", api]
  DEPLOY_KEY:
    from: env:STEWARD_SECRET_DEPLOY_KEY
    repositories: ["service-*"]
    environments:
      production: ["service-*"]
variables:
  REGION:
    value: eu-west-1
    org: { visibility: all }
`;

export interface BrokenFile {
  name: string;
  category: string;
  document?: string;
  text: string;
}

type LineMutation = (line: string) => string | undefined;

const valueLine = /^(\s*-?\s*[A-Za-z_"*-][\w"*.-]*:\s)(\S.*)$/;

const SCHEMA_KEYS = new Set(
  "rerun enabled max_attempts delay branches rules jobs log runner_lost deployments environments checks windows days hours timezone freeze from to reason config secrets variables org visibility repositories value".split(
    " ",
  ),
);

/** Operators applied to one line; undefined when the line does not fit the operator. */
const LINE_OPERATORS: Record<string, LineMutation> = {
  "syntax: unclosed flow sequence": (l) => (valueLine.test(l) ? l.replace(valueLine, "$1[$2") : undefined),
  "syntax: unclosed quote": (l) => (valueLine.test(l) ? l.replace(valueLine, '$1"$2') : undefined),
  "syntax: tab indentation": (l) => (l.startsWith("  ") ? `\t${l.trimStart()}` : undefined),
  "syntax: stray mapping": (l) => (l.trim() ? `${l} : :` : undefined),
  "type: list for a scalar": (l) => (valueLine.test(l) && !/\[/.test(l) ? l.replace(valueLine, "$1[1, 2]") : undefined),
  "type: mapping for a value": (l) => (valueLine.test(l) ? l.replace(valueLine, "$1{ a: 1 }") : undefined),
  // A variable's value may well be a number; everything else here may not.
  "type: number for a value": (l) =>
    valueLine.test(l) && !/^\s*value:/.test(l) ? l.replace(valueLine, "$1-17") : undefined,
  // Only keys of the schema: environment, secret and variable names are the user's to choose.
  "unknown key": (l) => {
    const m = /^(\s*-?\s*)([a-z_]+)(\w):/.exec(l);
    return m && SCHEMA_KEYS.has(m[2]! + m[3]!) ? l.replace(/^(\s*-?\s*)([a-z_]+)(\w):/, "$1$2$3$3x:") : undefined;
  },
};

/** Whole-value operators aimed at the fields with their own syntax. */
const VALUE_OPERATORS: [string, RegExp, string][] = [
  ["bad glob", /\["integration-\*"\]/, '["integration-[*"]'],
  ["bad glob", /\[main, "release\/\*"\]/, '[main, "release/{a,"]'],
  ["bad glob", /\["web-\*", api\]/, '["web-[", api]'],
  ["bad glob", /\["service-\*"\]/, '["service-{x"]'],
  ["bad regex", /"\/lost communication\/i"/, '"/lost (communication/i"'],
  ["bad regex", /"\/lost communication\/i"/, '"/a**/"'],
  ["bad regex", /"\/lost communication\/i"/, '"/x/zz"'],
  ["bad regex", /"\/lost communication\/i"/, '"/[z-a]/"'],
  ["bad time zone", /Europe\/Paris/, "Mars/Olympus_Mons"],
  ["bad time zone", /Europe\/Paris/, "Europe/Pariss"],
  ["bad time zone", /Europe\/Paris/, "+25:00"],
  ["bad time zone", /Europe\/Paris/, '""'],
  ["bad hours", /"09:00-17:00"/, '"25:00-17:00"'],
  ["bad hours", /"09:00-17:00"/, '"9-5"'],
  ["bad day", /\[mon, tue/, "[mon, tuesday"],
  ["bad duration", /delay: 30s/, "delay: 30 fortnights"],
  ["bad duration", /delay: 30s/, "delay: -5s"],
  ["bad instant", /from: 2026-12-20T00:00:00Z/, "from: 2026-13-45T99:00:00Z"],
  ["bad number", /max_attempts: 3/, "max_attempts: 0"],
  ["bad number", /max_attempts: 3/, "max_attempts: 3.5"],
  ["bad secret source", /env:STEWARD_SECRET_NPM_TOKEN/, "hunter2-literal-value"],
  ["bad secret source", /env:STEWARD_SECRET_NPM_TOKEN/, "vault:npm"],
  ["bad secret name", /NPM_TOKEN:/, "GITHUB_TOKEN:"],
  ["bad secret name", /NPM_TOKEN:/, "1NPM-TOKEN:"],
  ["bad visibility", /visibility: selected/, "visibility: everyone"],
  ["bad visibility", /visibility: all/, "visibility: selected-ish"],
];

export function brokenCorpus(): BrokenFile[] {
  const out: BrokenFile[] = [];
  const seen = new Set<string>();
  const add = (f: BrokenFile) => {
    const key = `${f.document ?? ""}\n${f.text}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(f);
  };
  for (const [base, document] of [
    [STEWARD_YML, undefined],
    [SECRETS_YML, ".github/steward/secrets.yml"],
  ] as const) {
    const lines = base.split("\n");
    for (const [category, op] of Object.entries(LINE_OPERATORS)) {
      lines.forEach((line, i) => {
        const changed = op(line);
        if (changed === undefined || changed === line) return;
        const text = [...lines.slice(0, i), changed, ...lines.slice(i + 1)].join("\n");
        add({
          name: `${category} at line ${i + 1}${document ? " (secrets)" : ""}`,
          category,
          ...(document ? { document } : {}),
          text,
        });
      });
    }
    for (const [category, pattern, replacement] of VALUE_OPERATORS) {
      if (!pattern.test(base)) continue;
      add({
        name: `${category}: ${replacement}${document ? " (secrets)" : ""}`,
        category,
        ...(document ? { document } : {}),
        text: base.replace(pattern, replacement),
      });
    }
    // Whole-file breakage.
    add({
      name: `empty mapping key${document ? " (secrets)" : ""}`,
      category: "syntax",
      ...(document ? { document } : {}),
      text: `${base}: x\n`,
    });
    add({
      name: `truncated${document ? " (secrets)" : ""}`,
      category: "syntax",
      ...(document ? { document } : {}),
      text: base.slice(0, Math.floor(base.length / 2)) + "[",
    });
    add({
      name: `not a mapping${document ? " (secrets)" : ""}`,
      category: "type",
      ...(document ? { document } : {}),
      text: "- just\n- a list\n",
    });
    add({
      name: `anchor soup${document ? " (secrets)" : ""}`,
      category: "syntax",
      ...(document ? { document } : {}),
      text: base.replace(/\n/, "\n  &anchor *alias: [\n"),
    });
  }
  return out;
}
