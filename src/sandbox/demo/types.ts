// What a demo scenario is: a name, and a run that drives the sandbox and reports rows.
import type { SandboxStack } from "../stack.js";
import type { DemoTarget } from "./target.js";

/** One line of the demo table: what was done, and what Steward did about it. */
export interface Row {
  step: string;
  /** Event or API call involved, e.g. `push`, `workflow_run.completed`. */
  event: string;
  /** What came back or happened, e.g. `202`, `re-run requested`. */
  result: string;
}

export type Print = (line: string) => void;

export interface Scenario {
  name: string;
  run(stack: SandboxStack, print: Print): Promise<Row[]>;
  /**
   * The same, through the hub's control surface alone (`target.ts`), so it can play into a sandbox
   * running in another process (`steward demo --into`). Scenarios that need Steward's own process
   * (its store, engine or environment: the secrets one sets the secret sources there) have none.
   */
  play?(target: DemoTarget, print: Print): Promise<Row[]>;
}
