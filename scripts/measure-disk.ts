// `npx tsx --conditions=steward-source scripts/measure-disk.ts [N] [DIR]`: records N deliveries
// (default 100,000) into a new SQLite store, real payloads from @octokit/webhooks-examples in the
// mix Steward's handlers take (workflow_run, workflow_job, check_run, check_suite, pull_request, push,
// deployment_status), and prints the data directory's size on disk, per million.
// Figures: docs/deploy/sizing.md.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { openSqliteStore } from "../src/store/sqlite/store.js";

const n = Number(process.argv[2] ?? 100_000);
const dir = process.argv[3] ?? mkdtempSync(join(tmpdir(), "steward-disk-"));
const mix = ["workflow_run", "workflow_job", "check_run", "check_suite", "pull_request", "push", "deployment_status"];
const payloads = mix.flatMap((event) =>
  (examples as { name: string; examples: Record<string, unknown>[] }[])
    .find((e) => e.name === event)!
    .examples.map((p) => ({ event, text: JSON.stringify(p), action: p.action as string | undefined })),
);
const store = openSqliteStore(dir);
const started = Date.now();
let payloadBytes = 0;
const batch: Promise<unknown>[] = [];
for (let i = 0; i < n; i++) {
  const p = payloads[i % payloads.length]!;
  payloadBytes += p.text.length;
  if (batch.length >= 500) await Promise.all(batch.splice(0));
  batch.push(
    store.deliveries.record({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
      event: p.event,
      action: p.action,
      installationId: 1 + (i % 50),
      repository: `acme/repo-${i % 500}`,
      headers: {
        "x-github-event": p.event,
        "x-github-delivery": String(i),
        "user-agent": "GitHub-Hookshot/abc1234",
        "content-type": "application/json",
        "x-github-hook-id": "1",
      },
      payload: p.text,
      receivedAt: new Date(),
    }),
  );
}
await Promise.all(batch);
await store.close();
const du = (path: string) =>
  existsSync(path) ? Number(execFileSync("du", ["-sb", path], { encoding: "utf8" }).split("\t")[0]) : 0;
const total = du(dir);
const db = du(join(dir, "steward.db")) + du(join(dir, "steward.db-wal"));
const mb = (b: number) => (b / 1024 / 1024).toFixed(1);
console.log(
  JSON.stringify({
    deliveries: n,
    seconds: (Date.now() - started) / 1000,
    meanPayloadBytes: Math.round(payloadBytes / n),
    dataDirMB: mb(total),
    sqliteMB: mb(db),
    gbPerMillion: (((total / n) * 1e6) / 1024 ** 3).toFixed(2),
    sqliteGbPerMillion: (((db / n) * 1e6) / 1024 ** 3).toFixed(2),
  }),
);
if (!process.argv[3]) rmSync(dir, { recursive: true, force: true });
