// The demo: scenarios played in order against the sandbox stack, printed as tables.
// Handler issues add their scenario files under ./scenarios and register them here.
import config from "./scenarios/config.js";
import deliveries from "./scenarios/deliveries.js";
import deployments from "./scenarios/deployments.js";
import rerun from "./scenarios/rerun.js";
import secrets from "./scenarios/secrets.js";
import { renderTable } from "./table.js";
import type { Print, Row, Scenario } from "./types.js";
import type { DemoTarget } from "./target.js";
import type { SandboxStack } from "../stack.js";

export const scenarios: Scenario[] = [deliveries, secrets, deployments, rerun, config];

/** Play every scenario; a failing scenario is reported in its table and the others still run. */
export async function runDemo(
  stack: SandboxStack,
  print: Print,
  list: Scenario[] = scenarios,
): Promise<{ failed: string[] }> {
  return playEach(list, (scenario, say) => scenario.run(stack, say), print);
}

/**
 * Play into a sandbox running in another process (`target.ts`'s remote target): the scenarios that
 * drive it through the hub's control surface alone; the others are named as not played.
 */
export async function playDemoInto(
  target: DemoTarget,
  print: Print,
  list: Scenario[] = scenarios,
): Promise<{ failed: string[]; notPlayed: string[] }> {
  const playable = list.filter((s) => s.play);
  const { failed } = await playEach(playable, (scenario, say) => scenario.play!(target, say), print);
  return { failed, notPlayed: list.filter((s) => !s.play).map((s) => s.name) };
}

async function playEach(
  list: Scenario[],
  play: (scenario: Scenario, print: Print) => Promise<Row[]>,
  print: Print,
): Promise<{ failed: string[] }> {
  const failed: string[] = [];
  for (const scenario of list) {
    print("");
    try {
      const rows = await play(scenario, (line) => print(`  ${line}`));
      print(renderTable(scenario.name, rows));
    } catch (err) {
      failed.push(scenario.name);
      print(
        renderTable(scenario.name, [
          { step: "scenario failed", event: "-", result: err instanceof Error ? err.message : String(err) },
        ]),
      );
    }
  }
  return { failed };
}
