// `steward new DIR [--typescript]`: a package of its own for one app Steward hosts, as
// create-probot-app lays one out: the app (a typed handler module), its app.yml (the events and
// permissions it needs, which the sandbox installs and `steward register` asks for), a test
// against the sandbox hub through `steward/testing`, .env.example, and npm scripts that run it with
// `steward run`. Steward is not on a registry: the package depends on this Steward by path.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { packageFile, packageVersion } from "../../package-root.js";

export const usage = `usage: steward new DIR [--typescript]
  writes a new app's package into DIR (which must be empty or absent): app.js (app.ts with
  --typescript, and tsconfig.json), app.yml, a test against the sandbox hub (steward/testing,
  vitest), .env.example, .gitignore and package.json, depending on this Steward by its path.
  Then: cd DIR && npm install && npm test; npm start runs the app in the sandbox.`;

interface Scaffold {
  name: string;
  typescript: boolean;
  /** npm specs of Steward and of the sandbox hub (undefined: not available from this install). */
  steward: string;
  hub: string | undefined;
}

/** A package name from the folder's name: lower case, [a-z0-9-] only. */
export function packageName(dir: string): string {
  const name = basename(resolve(dir))
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return name || "my-app";
}

function appSource(s: Scaffold): string {
  return `// ${s.name}: thanks the author of every new issue, once (a redelivery or a retry does not
// comment twice: ctx.once finds the comment an earlier attempt posted).
import { defineHandler } from "steward";

const MARKER = "<!-- ${s.name} -->";

export default defineHandler({
  name: "${s.name}",
  events: ["issues.opened"], // needs the issues event and issues: write (app.yml)
  async handle(ctx) {
    const { repository, issue } = ctx.payload;
    const where = { owner: repository.owner.login, repo: repository.name, issue_number: issue.number };
    const comment = await ctx.once(\`thanks:\${repository.id}:\${issue.number}\`, {
      run: async () =>
        (await ctx.octokit.rest.issues.createComment({ ...where, body: \`Thanks for opening this issue!\\n\${MARKER}\` }))
          .data.id,
      check: async () =>
        (await ctx.octokit.rest.issues.listComments({ ...where, per_page: 100 })).data.find((c) =>
          c.body?.includes(MARKER),
        )?.id,
    });
    return { status: "done", summary: \`comment \${comment.value} (\${comment.state})\` };
  },
});
`;
}

function appYml(s: Scaffold): string {
  return `# The GitHub App ${s.name} is registered as (\`npx steward register --handlers none ./${s.typescript ? "dist/app.js" : "app.js"}\`),
# and what the sandbox installs it with: the events it is sent and the permissions it may use.
name: ${s.name}
description: Thanks the author of every new issue.
url: https://github.com
hook_attributes:
  url: https://example.com/api/github/webhooks
public: false
default_events:
  - issues
default_permissions:
  issues: write
  metadata: read
`;
}

function testSource(s: Scaffold): string {
  const entry = s.typescript ? "./dist/app.js" : "./app.js";
  return `// Runs the app in the sandbox hub (a simulated GitHub on 127.0.0.1) with Steward, in this process,
// installed with app.yml's events and permissions: opens an issue and looks for the comment.
import { expect, test } from "vitest";
import { outcomeOf, startSandboxStack } from "steward/testing";

test("thanks the author of a new issue", async () => {
  const stack = await startSandboxStack({ apps: ["${entry}"] });
  try {
    const issue = stack.hub.control.openIssue({ owner: "acme", repo: "web", title: "It crashes on start" });
    await stack.hub.control.settled();
    const delivery = stack.hub.control.deliveries().find((d) => d.event === "issues");
    expect(delivery).toBeDefined();
    const outcome = await outcomeOf(stack, delivery${s.typescript ? "!" : ""}.guid, "${s.name}");
    expect(outcome.status).toBe("done");
    const comments = stack.hub.control.effects.filter(
      (e) => e.kind === "issues.commented" && e.detail.number === issue.number,
    );
    expect(comments).toHaveLength(1);
  } finally {
    await stack.close();
  }
});
`;
}

const ENV_EXAMPLE = `# Copy to .env (read by every steward command; the real environment wins). With APP_ID unset,
# \`npm start\` runs the app against the sandbox hub on 127.0.0.1 instead of GitHub.
# \`npx steward register\` fills in the first five through GitHub's manifest flow.
APP_ID=
PRIVATE_KEY_PATH=
WEBHOOK_SECRET=
GITHUB_CLIENT_ID=
GITHUB_CLIENT_SECRET=
# A smee.io channel: GitHub sends deliveries there, \`steward run\` forwards them to itself.
WEBHOOK_PROXY_URL=
`;

const TSCONFIG = {
  compilerOptions: {
    module: "NodeNext",
    moduleResolution: "NodeNext",
    target: "ES2022",
    strict: true,
    // The test runs the compiled app (./dist/app.js): Steward loads an app as Node does.
    outDir: "dist",
    rootDir: ".",
    skipLibCheck: true,
    types: [],
  },
  include: ["app.ts", "app.test.ts"],
};

function packageJson(s: Scaffold): string {
  const entry = s.typescript ? "./dist/app.js" : "./app.js";
  const pkg = {
    name: s.name,
    version: "0.1.0",
    private: true,
    type: "module",
    main: entry,
    scripts: {
      ...(s.typescript ? { build: "tsc" } : {}),
      start: `${s.typescript ? "tsc && " : ""}steward run ${entry}`,
      // The compiled test in dist/ is not run a second time.
      test: s.typescript ? "tsc && vitest run --exclude 'dist/**'" : "vitest run",
      register: `steward register --handlers none ${entry}`,
    },
    dependencies: { steward: s.steward },
    devDependencies: {
      ...(s.hub ? { "@steward/sandbox-hub": s.hub } : {}),
      ...(s.typescript ? { typescript: "~5.9" } : {}),
      vitest: "^4.1.12",
    },
  };
  return JSON.stringify(pkg, null, 2) + "\n";
}

function readme(s: Scaffold): string {
  return `# ${s.name}

An app hosted by [Steward](${s.steward.replace(/^file:/, "")}).

\`\`\`sh
npm install
npm test        # the app in the sandbox hub: an issue opened, the app's comment checked
npm start       # steward run: with no APP_ID, against the sandbox (its banner says where)
npm run register  # registers the GitHub App from app.yml and writes .env
\`\`\`
`;
}

/** The files of a new app's package, by path relative to its folder. */
export function scaffoldFiles(s: Scaffold): Record<string, string> {
  const app = s.typescript ? "app.ts" : "app.js";
  return {
    "package.json": packageJson(s),
    [app]: appSource(s),
    [s.typescript ? "app.test.ts" : "app.test.js"]: testSource(s),
    "app.yml": appYml(s),
    ".env.example": ENV_EXAMPLE,
    ".gitignore": "node_modules/\n.env\n.steward/\n*.pem\n" + (s.typescript ? "dist/\n" : ""),
    "README.md": readme(s),
    ...(s.typescript ? { "tsconfig.json": JSON.stringify(TSCONFIG, null, 2) + "\n" } : {}),
  };
}

/** Steward and the hub as npm specs: by path from a checkout (neither is on a registry). */
function sources(): { steward: string; hub: string | undefined } {
  const root = packageFile(".");
  const hub = join(root, "packages", "sandbox-hub");
  return existsSync(join(hub, "package.json"))
    ? { steward: `file:${root}`, hub: `file:${hub}` }
    : { steward: `^${packageVersion()}`, hub: undefined };
}

export async function run(args: string[]): Promise<number> {
  let dir: string | undefined;
  let typescript = false;
  for (const a of args) {
    if (a === "--typescript" || a === "--ts") typescript = true;
    else if (a.startsWith("-")) return fail(`unknown option "${a}"`);
    else if (dir === undefined) dir = a;
    else return fail(`one folder only (got "${dir}" and "${a}")`);
  }
  if (dir === undefined) return fail("name the folder to create: steward new my-app");
  const target = resolve(dir);
  if (existsSync(target) && readdirSync(target).length > 0)
    return fail(`${dir} is not empty: choose a new folder (nothing was written)`);
  const from = sources();
  const files = scaffoldFiles({ name: packageName(target), typescript, ...from });
  mkdirSync(target, { recursive: true });
  for (const [path, text] of Object.entries(files)) writeFileSync(join(target, path), text);
  const shown = relative(process.cwd(), target) || ".";
  process.stdout.write(
    `wrote ${Object.keys(files).sort().join(", ")} in ${shown}\n` +
      (from.hub
        ? ""
        : "note: this Steward was not run from its checkout, so the sandbox hub (a dev dependency for the test) " +
          "is not listed: npm install --save-dev <Steward checkout>/packages/sandbox-hub\n") +
      `next:\n  cd ${shown}\n  npm install\n  npm test\n  npm start\n`,
  );
  return 0;
}

function fail(message: string): number {
  process.stderr.write(`steward new: ${message}\n${usage}\n`);
  return 2;
}
