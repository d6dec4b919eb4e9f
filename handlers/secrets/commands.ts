// `steward sync --org ORG [--dry-run] [--concurrency N] [--wait | --force]`: plan (and unless
// --dry-run apply) the organisation's secrets policy from the command line, with the service's
// own configuration, store (SQLite or Redis) and fingerprint key, so the CLI and the service
// never disagree, and never sync one organisation at the same time (a lease in the store).
import {
  describeHolder,
  LeaseHeld,
  operatorReportOnly,
  type CommandContext,
  type HandlerCommand,
} from "../../src/index.js";
import { asRequester, describeError, statusOf } from "./api.js";
import { syncOrganisation } from "./organisation.js";
import { problemsSummary, textReport } from "./report.js";
import { progressPrinter } from "./progress-printer.js";

const usage = `usage: steward sync --org ORG [--dry-run] [--concurrency N] [--wait | --force]
  plans the secrets and variables of .github/steward/secrets.yml in ORG's admin repository
  (STEWARD_ADMIN_REPO) and applies it unless --dry-run; uses the service's configuration and store.
  One sync of an organisation runs at a time (service, CLI and replicas): when another holds it,
  this one says who and exits 1; --wait waits for it to finish; --force takes it over (the other
  stops between steps). Progress goes to stderr: one updating line on a terminal, plain lines
  otherwise. Ctrl-C stops between steps; what was written is recorded and the next run resumes.`;

export interface SyncArgs {
  org: string;
  dryRun: boolean;
  concurrency: number | undefined;
  wait: boolean;
  force: boolean;
}

/** Returns the parsed arguments or a usage error message. */
export function parseSyncArgs(args: readonly string[]): SyncArgs | string {
  let org: string | undefined;
  let dryRun = false;
  let concurrency: number | undefined;
  let wait = false;
  let force = false;
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    const value = () => inline ?? args[++i];
    if (flag === "--org") org = value();
    else if (flag === "--dry-run") dryRun = true;
    else if (flag === "--wait") wait = true;
    else if (flag === "--force") force = true;
    else if (flag === "--concurrency") {
      concurrency = Number(value());
      if (!Number.isInteger(concurrency) || concurrency < 1) return "--concurrency needs a positive whole number";
    } else if (flag === "--help" || flag === "-h") return "";
    else return `unknown argument ${flag}`;
  }
  if (!org) return "--org is required";
  if (wait && force) return "--wait and --force exclude each other";
  return { org, dryRun, concurrency, wait, force };
}

async function run(args: string[], io: CommandContext): Promise<number> {
  const parsed = parseSyncArgs(args);
  if (parsed === "") {
    io.out(`${usage}\n`);
    return 0;
  }
  if (typeof parsed === "string") {
    io.err(`steward sync: ${parsed}\n${usage}\n`);
    return 2;
  }
  const loaded = io.loadConfig();
  if ("problem" in loaded) {
    io.err(`steward sync: configuration: ${loaded.problem}\n`);
    return 2;
  }
  const { config } = loaded;
  const signal = io.interrupted();
  // The report goes to stdout; logs (warnings and worse) to stderr.
  const logger = io.logger(config);
  const octokits = io.github(config, logger);
  let installationId: number;
  try {
    const app = await octokits.appOctokit();
    const res = await app.request("GET /orgs/{org}/installation", { org: parsed.org });
    installationId = res.data.id;
  } catch (e) {
    io.err(
      `steward sync: ${statusOf(e) === 404 ? `the app is not installed on ${parsed.org}` : `cannot find the installation on ${parsed.org}: ${describeError(e)}`}\n`,
    );
    return 1;
  }
  let store;
  try {
    store = (await io.openStore(config, { logger }))!;
  } catch (e) {
    io.err(`steward sync: cannot open the store: ${describeError(e)}\n`);
    return 1;
  }
  const progress = progressPrinter(io.err, io.errIsTty === true);
  // The operator's report-only setting holds for the CLI's syncs as for the service's.
  const report = operatorReportOnly(config, "secrets");
  try {
    const outcome = await syncOrganisation({
      api: asRequester(await octokits.octokitFor(installationId)),
      store: store.kv,
      org: parsed.org,
      adminRepo: config.adminRepo,
      dataDir: config.dataDir,
      laneId: `${config.apiUrl}#${installationId}`,
      dryRun: parsed.dryRun,
      ...(report ? { report } : {}),
      ...(parsed.concurrency ? { fanOut: { concurrency: parsed.concurrency } } : {}),
      env: io.env,
      signal,
      onProgress: progress.update,
      lease: {
        who: "steward sync (CLI)",
        force: parsed.force,
        wait: parsed.wait,
        onWait: (holder) =>
          io.err(`steward sync: waiting for the sync of ${parsed.org} already running (${describeHolder(holder)})\n`),
      },
    });
    progress.end();
    switch (outcome.status) {
      case "no_admin_repo":
      case "no_policy":
        io.err(`steward sync: ${outcome.reason}\n`);
        return 1;
      case "invalid":
        io.err(`steward sync: ${outcome.file} has errors; nothing synced\n${problemsSummary(outcome.problems)}\n`);
        return 1;
      case "synced":
        io.out(textReport(outcome.result) + "\n");
        if (outcome.result.stopped) return 130;
        return outcome.result.failures.length > 0 || outcome.result.pausedUntil ? 1 : 0;
    }
  } catch (e) {
    progress.end();
    if (e instanceof LeaseHeld) {
      io.err(
        `steward sync: ${e.message}\n  --wait waits for it to finish; --force takes it over (it stops between steps)\n`,
      );
      return 1;
    }
    io.err(`steward sync: ${describeError(e)}\n`);
    return 1;
  } finally {
    await store.close();
  }
}

export const syncCommand: HandlerCommand = {
  name: "sync",
  summary: "sync Actions secrets and variables: steward sync --org ORG [--dry-run]",
  usage,
  run,
};
