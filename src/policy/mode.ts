// Report-only mode: a handler, or one rule of its policy, that decides and records exactly as it
// would and shows what it would have done, but makes no acting write (no re-run, no deployment
// answer, no secret written, no failing check). Where the switch comes from is kept with the
// decision, so a report can say why it did not act.
import type { StewardConfig } from "../config/types.js";

/** `act`: carry the decision out (the default); `report`: record and report it only. */
export type ActMode = "act" | "report";

/** The schema of a `mode` key on a policy section or rule. */
export const ACT_MODE_SCHEMA = { type: "string", enum: ["act", "report"] } as const;

/**
 * Why the operator's setting makes handler `name` report only (STEWARD_MODE=report or
 * STEWARD_REPORT_ONLY naming it), or undefined when it lets the handler act.
 */
export function operatorReportOnly(config: Pick<StewardConfig, "reportOnly">, name: string): string | undefined {
  const list = config.reportOnly ?? [];
  if (list.includes("*")) return "STEWARD_MODE=report";
  if (list.some((n) => n.toLowerCase() === name.toLowerCase())) return `STEWARD_REPORT_ONLY names ${name}`;
  return undefined;
}

/** The first reason given to report only, or undefined (act) when none is. */
export function reportReason(...reasons: (string | false | undefined)[]): string | undefined {
  for (const r of reasons) if (r) return r;
  return undefined;
}
