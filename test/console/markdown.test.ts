// Reasons and summaries are written in markdown (check runs read it so); the console renders them
// with no HTML passing through and links only to web addresses.
import { describe, expect, it } from "vitest";
import { markdown, markdownInline } from "../../src/console/markdown.js";

describe("markdown on console pages", () => {
  it("renders code spans and emphasis: no raw backticks or asterisks", () => {
    const out = markdownInline("gate `tier: critical` requires **2** approvals").text;
    expect(out).toBe("gate <code>tier: critical</code> requires <strong>2</strong> approvals");
  });

  it("shows HTML as text, wherever it is", () => {
    for (const text of ["<script>alert(1)</script>", '<img src=x onerror="alert(1)">', "`<b>` and <i>x</i>"]) {
      for (const out of [markdown(text).text, markdownInline(text).text]) {
        expect(out).not.toMatch(/<(script|img|b|i)[\s>]/);
        expect(out).toContain("&lt;");
      }
    }
  });

  it("links only to http and https addresses, and tells them nothing of the console", () => {
    const ok = markdownInline("[run 7](https://ghe.example.com/acme/web/actions/runs/7)").text;
    expect(ok).toBe('<a href="https://ghe.example.com/acme/web/actions/runs/7" rel="noopener noreferrer">run 7</a>');
    for (const url of [
      "javascript:alert(1)",
      "data:text/html,x",
      "/console/dead",
      "file:///etc/passwd",
      "vbscript:x",
    ]) {
      const out = markdown(`[click](${url})`).text;
      expect(out).not.toContain("<a ");
    }
  });
});
