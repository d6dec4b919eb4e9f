// The results as Markdown: printed by `npm run bench` and published in docs/bench.md, with the
// floors the product promises, each said to be met or not.
import type { ConsoleRow } from "./console.js";
import { PEER, PROBOT, STEWARD, type BenchOptions, type BenchResults, type Contender } from "./bench.js";
import { loadModelTargets, renderLoadModel } from "./replay.js";

const ms = (v: number) => (v < 10 ? v.toFixed(2) : v.toFixed(0));
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
/** A console page a signed-in person opens answers within this (p50). */
export const CONSOLE_FLOOR_MS = 200;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;

export function floors(r: BenchResults, o: BenchOptions): { text: string; met: boolean }[] {
  const byName = (name: string) => r.intake.find((c) => c.name === name)!;
  const peer = byName(PEER);
  const probot = byName(PROBOT);
  const stewards = r.intake.filter((c) => c.name.startsWith("Steward"));
  const intakeFloor = (s: Contender) => {
    const misses = s.levels.flatMap((l, i) => {
      const p = peer.levels[i]!;
      return l.rps >= p.rps && l.p99 <= p.p99
        ? []
        : [`${l.connections} connections: ${ratio(l.rps, p.rps)}, p99 ${ms(l.p99)} ms against ${ms(p.p99)} ms`];
    });
    return {
      met: misses.length === 0,
      text: `${s.name} at least 1.0x the durable peer at ${o.connections.join(", ")} connections with p99 no worse${misses.length ? `: not at ${misses.join("; ")}` : ""}`,
    };
  };
  const b = r.burst;
  return [
    ...stewards.map(intakeFloor),
    {
      met: b.answered === o.burst.deliveries && b.seconds <= 10,
      text: `burst of ${o.burst.deliveries} deliveries over ${o.burst.connections} connections all answered within 10 s (${b.answered} answered 2xx in ${b.seconds.toFixed(1)} s)`,
    },
    ...r.e2e
      .filter((e) => e.server === "Steward")
      .map((e) => ({
        met: e.answered === e.sent && e.p50 < 10,
        text: `${e.flow}: p50 under 10 ms (${ms(e.p50)} ms, ${e.answered} of ${e.sent} answered)`,
      })),
    ...stewards.map((s) => ({
      met: s.peakRss <= probot.peakRss,
      text: `${s.name} peak RSS at most Probot's (${mb(s.peakRss)} against ${mb(probot.peakRss)})`,
    })),
    ...r.console.map((c) => {
      const slow = c.pages.filter((p) => p.p50 >= CONSOLE_FLOOR_MS);
      return {
        met: slow.length === 0,
        text: `console on ${c.store} with ${o.console.deliveries} deliveries: every page's p50 under ${CONSOLE_FLOOR_MS} ms${slow.length ? `: not ${slow.map((p) => `${p.page} (${ms(p.p50)} ms)`).join(", ")}` : ""}`,
      };
    }),
    ...loadModelTargets(r.scale).map((t) => ({ ...t, text: `load model: ${t.text}` })),
  ];
}

export function renderResults(r: BenchResults, o: BenchOptions): string {
  const levels = o.connections;
  const peer = r.intake.find((c) => c.name === PEER)!;
  const probot = r.intake.find((c) => c.name === PROBOT)!;
  const row = (cells: string[]) => `| ${cells.join(" | ")} |`;
  const lines = [
    `Intake: deliveries answered 2xx a second, and p99 latency, over ${o.seconds} s at each level; peak RSS of the server process over the whole intake run.`,
    "",
    row(["server", ...levels.map((c) => `${c} conn.: /s, p99 ms`), "peak RSS"]),
    row(["---", ...levels.map(() => "---:"), "---:"]),
    ...r.intake.map((c) =>
      row([
        c.name,
        ...c.levels.map(
          (l) => `${l.rps.toFixed(0)}, ${ms(l.p99)}${l.refused + l.errors ? ` (${l.refused + l.errors} failed)` : ""}`,
        ),
        mb(c.peakRss),
      ]),
    ),
    "",
    row(["ratio", ...levels.map((c) => `${c} conn.`)]),
    row(["---", ...levels.map(() => "---:")]),
    ...r.intake
      .filter((c) => c.name.startsWith("Steward"))
      .flatMap((s) => [
        row([`${s.name} / durable peer`, ...s.levels.map((l, i) => ratio(l.rps, peer.levels[i]!.rps))]),
        row([`${s.name} / in-memory Probot`, ...s.levels.map((l, i) => ratio(l.rps, probot.levels[i]!.rps))]),
      ]),
    "",
    `Burst, ${STEWARD}: ${o.burst.deliveries} deliveries over ${o.burst.connections} connections: ${r.burst.answered} answered 2xx, ${r.burst.refused} refused, ${r.burst.errors} unanswered; all answered after ${r.burst.seconds.toFixed(1)} s (p50 ${ms(r.burst.p50)} ms, p99 ${ms(r.burst.p99)} ms).`,
    "",
    row(["end to end, against the sandbox hub", "app", "answered", "p50 ms", "p99 ms"]),
    row(["---", "---", "---:", "---:", "---:"]),
    ...r.e2e.map((e) => row([e.flow, e.server, `${e.answered} of ${e.sent}`, ms(e.p50), ms(e.p99)])),
    "",
    ...(r.console.length ? [renderConsole(r.console, o)] : []),
    renderLoadModel(r.scale),
    ...r.notes.flatMap((note) => [note, ""]),
    "Floors:",
    "",
    ...floors(r, o).map((f) => `- ${f.met ? "met" : "**NOT MET**"}: ${f.text}`),
  ];
  return `${lines.join("\n")}\n`;
}

/**
 * The intake alone (`--intake`, `--postgres-intake`): each server's rate and p99 at each level, its
 * ratio to `against`, and its peak RSS.
 */
export function renderIntakeRatios(intake: Contender[], against: string, notes: string[]): string {
  const base = intake.find((c) => c.name === against);
  const lines = intake.flatMap((c) => [
    ...c.levels.map(
      (l, i) =>
        `${c.name}, ${l.connections} conn.: ${l.rps.toFixed(0)}/s, p99 ${ms(l.p99)} ms${base && c !== base ? `, ${ratio(l.rps, base.levels[i]!.rps)} ${against}` : ""}`,
    ),
    `${c.name}: peak RSS ${mb(c.peakRss)}`,
  ]);
  return [...lines, ...notes].join("\n") + "\n";
}

/** The console's pages, a row each, p50 / max per store (also printed alone by `--console`). */
export function renderConsole(rows: ConsoleRow[], o: BenchOptions): string {
  const row = (cells: string[]) => `| ${cells.join(" | ")} |`;
  const first = rows[0]!;
  const seeded = Object.entries(first.seeded)
    .map(([k, n]) => `${n} ${k}`)
    .join(", ");
  return (
    [
      `Console: ${o.console.deliveries} deliveries kept (${seeded}), each page loaded ${o.console.loads} times over HTTP by a signed-in owner after one warm-up load, one load at a time: p50 / max ms.`,
      "",
      row(["page", ...rows.map((c) => c.store)]),
      row(["---", ...rows.map(() => "---:")]),
      ...first.pages.map((p, i) =>
        row([p.page, ...rows.map((c) => (c.pages[i] ? `${ms(c.pages[i].p50)} / ${ms(c.pages[i].max)}` : "—"))]),
      ),
      row(["(seeding, s)", ...rows.map((c) => c.seedSeconds.toFixed(0))]),
    ].join("\n") + "\n"
  );
}
