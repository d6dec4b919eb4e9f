import { describe, expect, it } from "vitest";
import { examples } from "../support/webhook-examples.js";
import { githubTimeOf, LAG_EVENTS } from "../../src/intake/github-time.js";

type Example = Record<string, unknown> & { action?: string };
const byEvent = new Map(
  (examples as { name: string; examples: Example[] }[]).map((e) => [e.name, e.examples] as const),
);

describe("when GitHub says an event happened", () => {
  it("reads the event's own time from GitHub's example payloads", () => {
    const read = (event: string, index = 0) => {
      const payload = byEvent.get(event)![index]!;
      return githubTimeOf(event, payload.action, payload)?.toISOString();
    };
    const completedRun = byEvent.get("workflow_run")!.find((p) => p.action === "completed")!;
    expect(githubTimeOf("workflow_run", "completed", completedRun)?.toISOString()).toBe(
      new Date((completedRun.workflow_run as { updated_at: string }).updated_at).toISOString(),
    );
    // A push carries its time as seconds on the repository.
    const push = byEvent.get("push")![0]!;
    expect(read("push")).toBe(new Date((push.repository as { pushed_at: number }).pushed_at * 1000).toISOString());
    const started = byEvent.get("workflow_job")!.find((p) => p.action === "in_progress")!;
    expect(githubTimeOf("workflow_job", "in_progress", started)?.toISOString()).toBe(
      new Date((started.workflow_job as { started_at: string }).started_at).toISOString(),
    );
    const status = byEvent.get("status")![0]!;
    expect(read("status")).toBe(new Date(status.updated_at as string).toISOString());
  });

  it("measures every listed event that GitHub's examples have, and no other", () => {
    for (const event of LAG_EVENTS) {
      for (const payload of byEvent.get(event) ?? []) {
        const at = githubTimeOf(event, payload.action, payload);
        // A check run re-requested or asked for an action has no time of its own.
        if (event === "check_run" && !["created", "completed"].includes(payload.action ?? "")) {
          expect(at).toBeUndefined();
          continue;
        }
        expect(at, `${event}.${payload.action}`).toBeInstanceOf(Date);
        expect(Number.isFinite(at!.getTime())).toBe(true);
      }
    }
    expect(githubTimeOf("ping", undefined, byEvent.get("ping")![0]!)).toBeUndefined();
    // Names of Object.prototype are events nobody measures, not functions to call.
    expect(githubTimeOf("constructor", undefined, {})).toBeUndefined();
    expect(githubTimeOf("workflow_run", "completed", { workflow_run: { updated_at: "not a time" } })).toBeUndefined();
  });
});
