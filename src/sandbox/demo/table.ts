// Plain-text table for the demo output.
import type { Row } from "./types.js";

export function renderTable(title: string, rows: Row[]): string {
  const header: Row = { step: "step", event: "event", result: "result" };
  const all = [header, ...rows];
  const width = (k: keyof Row) => Math.max(...all.map((r) => r[k].length));
  const w = { step: width("step"), event: width("event"), result: width("result") };
  const line = (r: Row) => `| ${r.step.padEnd(w.step)} | ${r.event.padEnd(w.event)} | ${r.result.padEnd(w.result)} |`;
  const rule = `|${"-".repeat(w.step + 2)}|${"-".repeat(w.event + 2)}|${"-".repeat(w.result + 2)}|`;
  return [`## ${title}`, line(header), rule, ...rows.map(line)].join("\n");
}
