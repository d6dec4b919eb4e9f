// The published pair `probot-commands` and `probot-metadata` through `steward run`: an app written
// as their READMEs show (fixtures/label-commands) labels an issue from a `/label bug` comment and
// writes who asked into the issue body's metadata, in the sandbox, read back over the hub's REST API.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { control, pollUntil, readAs, sandboxChildren } from "./sandbox-child.js";

const APP = join(import.meta.dirname, "fixtures", "label-commands", "index.js");
const children = sandboxChildren();

describe("probot-commands with probot-metadata through steward run", () => {
  it("labels an issue from a /label comment and writes the metadata into the issue's body", async () => {
    const dir = await children.tempDir("steward-commands-");
    const run = await children.start(["run", APP], dir);
    const { hub } = run;

    const opened = await control(hub, "openIssue", {
      owner: "acme",
      repo: "web",
      title: "Crashes on start",
      body: "It crashes.",
    });
    expect(opened.status).toBe(200);
    const number = opened.body.result.number as number;
    const comment = { owner: "acme", repo: "web", number, body: "/label bug", author: "dev-dana" };
    expect((await control(hub, "commentOnIssue", comment)).status).toBe(200);

    const issue = await pollUntil(
      () => readAs(hub, "dev-dana", `/repos/acme/web/issues/${number}`),
      (i) => (i.labels ?? []).some((l: { name: string }) => l.name === "bug") && /<!-- probot = /.test(i.body ?? ""),
      "the label and the metadata",
      run.out,
    );
    expect(issue.labels.map((l: { name: string }) => l.name)).toEqual(["bug"]);
    const installation = (await control(hub, "installation", { args: ["acme"] })).body.result as { id: number };
    const [text, meta] = (issue.body as string).split("\n\n<!-- probot = ");
    expect(text).toBe("It crashes.");
    expect(JSON.parse(meta!.replace(/ -->$/, ""))).toEqual({ [installation.id]: { labelledBy: "dev-dana" } });

    run.proc.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  }, 180_000);
});
