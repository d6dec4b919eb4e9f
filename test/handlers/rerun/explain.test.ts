// Rendering of the steward/rerun check run from a commit's decisions.
import { describe, expect, it } from "vitest";
import { MAX_EXPLANATIONS, renderCheck, type Explanation } from "../../../handlers/rerun/explain.js";

function explanation(attempt: number, over: Partial<Explanation> = {}): Explanation {
  return {
    runId: 42,
    workflow: "CI",
    attempt,
    maxAttempts: 3,
    htmlUrl: "http://127.0.0.1/acme/web/actions/runs/42",
    action: "rerun_failed_jobs",
    reasons: ["all 1 failed jobs are transient"],
    verdicts: [
      {
        id: 1,
        name: "e2e | shard 1",
        conclusion: "failure",
        transient: true,
        rule: 0,
        reason: "matched rule 1 (runner_lost true)",
      },
    ],
    at: "2024-01-01T00:00:00Z",
    ...over,
  };
}

describe("renderCheck", () => {
  it("titles by the latest decision and lists decisions newest first", () => {
    const { title, summary } = renderCheck([
      explanation(1),
      explanation(2, { action: "gave_up", reasons: ["attempt 2 of 2: attempts exhausted"] }),
    ]);
    expect(title).toBe("Did not re-run CI attempt 2");
    expect(summary.indexOf("attempt 2")).toBeLessThan(summary.indexOf("attempt 1"));
    expect(summary).toContain("[run 42](http://127.0.0.1/acme/web/actions/runs/42)");
    expect(summary).toContain("**Action:** re-ran the failed jobs and their dependents (attempt 2 of 3).");
  });

  it("escapes table cells", () => {
    const { summary } = renderCheck([explanation(1)]);
    expect(summary).toContain("| e2e \\| shard 1 | failure | yes |");
  });

  it("keeps the newest decisions and says how many were left out", () => {
    const history = Array.from({ length: MAX_EXPLANATIONS + 3 }, (_, i) => explanation(i + 1));
    const { summary } = renderCheck(history);
    expect(summary).toContain(`attempt ${MAX_EXPLANATIONS + 3}\n`);
    expect(summary).not.toContain("attempt 3\n");
    expect(summary).toContain("_3 older decisions not shown._");
  });

  it("explains a refusal", () => {
    const { title, summary } = renderCheck([
      explanation(1, { action: "refused", detail: '"This workflow run cannot be retried"' }),
    ]);
    expect(title).toBe("Could not re-run CI attempt 1");
    expect(summary).toContain('not re-run: the API refused ("This workflow run cannot be retried")');
  });
});
