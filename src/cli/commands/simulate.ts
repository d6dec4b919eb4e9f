// `steward simulate --policy FILE [--repo OWNER/NAME]`: what a steward.yml would have done with the
// failed runs and deployment requests Steward already decided (the facts it stored when deciding),
// compared with what it did. Reads STEWARD_DATA_DIR. Nothing is changed anywhere.
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { policyHandlers } from "../../../handlers/index.js";
import { resolvePolicy } from "../../policy/resolve.js";
import { simulatedHandlers, simulatePolicy } from "../../policy/impact.js";
import { openSqliteStore, storeFileName } from "../../store/sqlite/store.js";
import type { Store } from "../../store/types.js";

export const usage = `usage: steward simulate --policy FILE [--repo OWNER/NAME]
what the policy FILE (a .github/steward.yml) would have done with the last 200 failed runs and the
last 50 deployment requests Steward decided (of one repository, or of all), compared with what it
did; reads STEWARD_DATA_DIR (default ./.steward)`;

const REPO = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

/** The simulation's lines for an effective policy, over one repository's records or all of them. */
export async function simulate(
  store: Pick<Store, "list">,
  sections: Record<string, unknown>,
  repo?: string,
): Promise<string[]> {
  return simulatePolicy(await policyHandlers(), sections, { store, repository: repo });
}

function fail(message: string, code = 2): number {
  process.stderr.write(`steward simulate: ${message}\n${code === 2 ? `\n${usage}\n` : ""}`);
  return code;
}

export async function run(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: { policy: { type: "string" }, repo: { type: "string" } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    return fail((e as Error).message);
  }
  if (!values.policy) return fail("--policy FILE is required");
  if (values.repo !== undefined && !REPO.test(values.repo)) return fail(`--repo "${values.repo}" is not OWNER/NAME`);
  let text: string;
  try {
    text = readFileSync(values.policy, "utf8");
  } catch (e) {
    return fail(`cannot read ${values.policy}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, 1);
  }
  const resolved = resolvePolicy({ repo: { file: values.policy, text } }, await policyHandlers());
  const errors = resolved.problems.filter((p) => p.severity === "error");
  if (errors.length > 0) {
    return fail(
      `${values.policy} has ${errors.length} error(s); run steward validate ${values.policy}\n${errors.map((p) => `  ${p.message}`).join("\n")}`,
      1,
    );
  }
  const dir = resolve(process.env.STEWARD_DATA_DIR || ".steward");
  const scope = values.repo ?? "every repository";
  if (!existsSync(join(dir, storeFileName))) {
    process.stdout.write(`no decisions recorded in ${dir}: nothing to simulate\n`);
    return 0;
  }
  const store = openSqliteStore(dir);
  try {
    const lines = await simulate(store.kv, resolved.sections, values.repo);
    const simulated = simulatedHandlers(await policyHandlers()).map((h) => h.policy!.key);
    process.stdout.write(
      lines.length
        ? `${scope}: with ${values.policy}, ${lines.join("; ")}.\n`
        : `${values.policy} has no ${simulated.join(" or ")} section to simulate\n`,
    );
  } finally {
    store.close();
  }
  return 0;
}
