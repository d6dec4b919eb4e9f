// Routing (src/dispatch/route.ts): which pushes may touch a policy file, judged from the text
// before it is parsed, never saying "no" where the parsed payload would say "yes".
import { describe, expect, it } from "vitest";
import examples from "@octokit/webhooks-examples";
import { PUSH_COMMITS_LISTED, pushMayTouchPolicy, pushTouchesPolicy } from "../../src/dispatch/route.js";

interface Example {
  name: string;
  examples: Record<string, any>[];
}

const pushes = (examples as unknown as Example[]).find((e) => e.name === "push")!.examples;

function touching(path: string): Record<string, any> {
  const p = structuredClone(pushes.find((x) => x.commits.length > 0)!);
  p.commits[0].modified = ["README.md", path];
  return p;
}

describe("pushMayTouchPolicy", () => {
  it("says no for the example pushes, which touch no policy file", () => {
    for (const p of pushes) {
      expect(pushTouchesPolicy("push", p)).toBe(false);
      expect(pushMayTouchPolicy(JSON.stringify(p))).toBe(false);
    }
  });

  it("says yes whenever the parsed payload touches a policy file, escaped characters included", () => {
    for (const path of [".github/steward.yml", ".github/steward.yaml", ".github/steward/secrets.yml"]) {
      const text = JSON.stringify(touching(path));
      expect(pushTouchesPolicy("push", JSON.parse(text))).toBe(true);
      expect(pushMayTouchPolicy(text)).toBe(true);
      // JSON may spell any character as \uXXXX (and a slash as \/): the parsed path is the same.
      const escaped = text.replace(`.github/${path.slice(8)}`, `.github\\/\\u0073teward${path.slice(15)}`);
      expect(escaped).not.toContain("steward");
      expect(pushTouchesPolicy("push", JSON.parse(escaped))).toBe(true);
      expect(pushMayTouchPolicy(escaped)).toBe(true);
    }
  });

  it("takes a push listing as many commits as GitHub lists to touch a policy file, from its text too", () => {
    const base = pushes.find((x) => x.commits.length > 0)!;
    // The smallest commits GitHub could list: no message, no paths, empty names.
    const commit = { id: "0".repeat(40), tree_id: "1".repeat(40), distinct: true, message: "", timestamp: "2024-01-01T00:00:00Z", url: `https://github.com/o/r/commit/${"0".repeat(40)}`, author: { name: "", email: "" }, committer: { name: "", email: "" }, added: [], removed: [], modified: [] };
    const long = { ...structuredClone(base), commits: Array.from({ length: PUSH_COMMITS_LISTED }, () => commit), head_commit: commit };
    const text = JSON.stringify(long);
    expect(text).not.toContain("steward");
    expect(pushTouchesPolicy("push", long)).toBe(true);
    expect(pushMayTouchPolicy(text)).toBe(true);
    const shorter = { ...long, commits: long.commits.slice(1) };
    expect(pushTouchesPolicy("push", shorter)).toBe(false);
  });
});
