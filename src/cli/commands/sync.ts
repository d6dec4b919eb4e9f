// `steward sync --org ORG [--dry-run] [--concurrency N]`: plan (and unless --dry-run apply)
// the organisation's secrets policy from the command line, with the service's own
// configuration, store and fingerprint key, so the CLI and the service never disagree.
import pino from "pino";
import { createOctokitFactory } from "../../api/client.js";
import { ConfigError, loadConfig } from "../../config/env.js";
import { createLogger } from "../../log/logger.js";
import { openSqliteStore } from "../../store/sqlite.js";
import { asRequester, describeError, statusOf } from "../../../handlers/secrets/api.js";
import { syncOrganisation } from "../../../handlers/secrets/organisation.js";
import { problemsSummary, textReport } from "../../../handlers/secrets/report.js";

export const usage = `usage: steward sync --org ORG [--dry-run] [--concurrency N]
  plans the secrets and variables of .github/steward/secrets.yml in ORG's admin repository
  (STEWARD_ADMIN_REPO) and applies it unless --dry-run; uses the service's configuration`;

export interface SyncArgs {
  org: string;
  dryRun: boolean;
  concurrency: number | undefined;
}

/** Returns the parsed arguments or a usage error message. */
export function parseSyncArgs(args: readonly string[]): SyncArgs | string {
  let org: string | undefined;
  let dryRun = false;
  let concurrency: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    const value = () => inline ?? args[++i];
    if (flag === "--org") org = value();
    else if (flag === "--dry-run") dryRun = true;
    else if (flag === "--concurrency") {
      concurrency = Number(value());
      if (!Number.isInteger(concurrency) || concurrency < 1) return "--concurrency needs a positive whole number";
    } else if (flag === "--help" || flag === "-h") return "";
    else return `unknown argument ${flag}`;
  }
  if (!org) return "--org is required";
  return { org, dryRun, concurrency };
}

export interface Io {
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
}

const processIo: Io = { env: process.env, out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };

export async function run(args: string[], io: Io = processIo): Promise<number> {
  const parsed = parseSyncArgs(args);
  if (parsed === "") {
    io.out(`${usage}\n`);
    return 0;
  }
  if (typeof parsed === "string") {
    io.err(`steward sync: ${parsed}\n${usage}\n`);
    return 2;
  }
  let config;
  try {
    config = loadConfig(io.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      io.err(`steward sync: configuration: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  // The report goes to stdout; logs (warnings and worse) to stderr.
  const logger = createLogger({ level: config.logLevel === "info" ? "warn" : config.logLevel, format: config.logFormat, destination: pino.destination({ dest: 2, sync: true }) });
  const octokits = createOctokitFactory({ config, logger });
  let installationId: number;
  try {
    const app = await octokits.appOctokit();
    const res = await app.request("GET /orgs/{org}/installation", { org: parsed.org });
    installationId = res.data.id;
  } catch (e) {
    io.err(`steward sync: ${statusOf(e) === 404 ? `the app is not installed on ${parsed.org}` : `cannot find the installation on ${parsed.org}: ${describeError(e)}`}\n`);
    return 1;
  }
  const store = openSqliteStore(config.dataDir, { logger });
  try {
    const outcome = await syncOrganisation({
      api: asRequester(await octokits.octokitFor(installationId)),
      store,
      org: parsed.org,
      adminRepo: config.adminRepo,
      dataDir: config.dataDir,
      laneId: `${config.apiUrl}#${installationId}`,
      dryRun: parsed.dryRun,
      ...(parsed.concurrency ? { fanOut: { concurrency: parsed.concurrency } } : {}),
      env: io.env,
    });
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
        return outcome.result.failures.length > 0 || outcome.result.pausedUntil ? 1 : 0;
    }
  } catch (e) {
    io.err(`steward sync: ${describeError(e)}\n`);
    return 1;
  } finally {
    store.close();
  }
}
