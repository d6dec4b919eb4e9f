// The hub's route table: the most specific pattern wins, parameters are decoded, a rest
// parameter takes the remaining segments, HEAD falls back to GET.
import { describe, expect, it } from "vitest";
import { RouteTable } from "../src/core/router.js";

const ok = () => ({ status: 200 });

function table(...patterns: [string, string][]): RouteTable {
  const t = new RouteTable();
  for (const [method, pattern] of patterns) t.add(method, pattern, ok);
  return t;
}

describe("RouteTable", () => {
  it("prefers literal segments to parameters, and parameters to a rest", () => {
    const t = table(
      ["GET", "/repos/{owner}/{repo}/{rest+}"],
      ["GET", "/repos/{owner}/{repo}/branches/{branch}"],
      ["GET", "/repos/{owner}/{repo}/branches/main"],
    );
    expect(t.match("GET", "/repos/acme/web/branches/main")?.route.pattern).toBe("/repos/{owner}/{repo}/branches/main");
    expect(t.match("GET", "/repos/acme/web/branches/dev")).toMatchObject({
      route: { pattern: "/repos/{owner}/{repo}/branches/{branch}" },
      params: { owner: "acme", repo: "web", branch: "dev" },
    });
    expect(t.match("GET", "/repos/acme/web/contents/a/b.txt")).toMatchObject({
      route: { pattern: "/repos/{owner}/{repo}/{rest+}" },
      params: { rest: "contents/a/b.txt" },
    });
  });

  it("decodes parameters and rejects paths of another length", () => {
    const t = table(["GET", "/repos/{owner}/{repo}"]);
    expect(t.match("GET", "/repos/acme/my%20repo")?.params).toEqual({ owner: "acme", repo: "my repo" });
    expect(t.match("GET", "/repos/acme")).toBeUndefined();
    expect(t.match("GET", "/repos/acme/web/extra")).toBeUndefined();
  });

  it("needs at least one segment for a rest, and matches by method", () => {
    const t = table(["GET", "/files/{path+}"], ["POST", "/files"]);
    expect(t.match("GET", "/files")).toBeUndefined();
    expect(t.match("POST", "/files")?.route.method).toBe("POST");
    expect(t.match("DELETE", "/files/a")).toBeUndefined();
    expect(t.match("get", "/files/a/b")?.params).toEqual({ path: "a/b" });
  });

  it("answers HEAD with the GET route when there is no HEAD route", () => {
    const t = table(["GET", "/zen"]);
    expect(t.match("HEAD", "/zen")?.route.method).toBe("GET");
  });
});
