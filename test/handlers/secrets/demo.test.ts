// The secrets demo scenario plays through against the sandbox stack and its table shows
// every step succeeded, without a value in the output.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startSandboxStack, type SandboxStack } from "../../../src/sandbox/stack.js";
import { runDemo } from "../../../src/sandbox/demo/index.js";
import scenario from "../../../src/sandbox/demo/scenarios/secrets.js";
import secrets from "../../../handlers/secrets/index.js";

let stack: SandboxStack;
beforeAll(async () => {
  stack = await startSandboxStack({ handlers: [secrets] });
});
afterAll(async () => {
  await stack?.close();
});

it("plays the secrets scenario", async () => {
  const lines: string[] = [];
  const { failed } = await runDemo(stack, (l) => lines.push(l), [scenario]);
  const out = lines.join("\n");
  expect(failed).toEqual([]);
  expect(out).toMatch(/push the policy .*steward\/sync: success \(5 created, 0 updated, 0 deleted\)/);
  expect(out).toMatch(/org NPM_TOKEN \(selected: api, web\).*matches the source/);
  expect(out.match(/matches the source/g)).toHaveLength(5);
  expect(out).toMatch(/sync again, nothing changed .*0 created, 0 updated, 0 deleted\); 0 writes/);
  expect(out).toMatch(/edited out of band.*1 updated.*repaired/);
  expect(out).toMatch(
    /drops DEPLOY_KEY .*steward\/plan: success \(0 to create, 0 to update, 2 to delete, 3 unchanged\)/,
  );
  expect(out).toMatch(/DEPLOY_KEY still in place/);
  expect(out).toMatch(/prune: true.*0 created, 0 updated, 2 deleted\); pruned/);
  expect(out).not.toMatch(/npm_[0-9a-f]{24}|deploy-key-[0-9a-f]{24}/);
});
