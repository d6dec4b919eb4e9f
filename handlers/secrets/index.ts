// The `secrets` handler: keeps an organisation's Actions secrets and variables in line with
// `.github/steward/secrets.yml` in its admin repository. facts.ts reads what a delivery asks,
// decide.ts decides, execute.ts syncs or plans and reports.
import { defineHandler } from "../../src/index.js";
import { isAdminRepo, PLAN_PULL_REQUEST_ACTIONS } from "./decide.js";
import { decideDelivery } from "./facts.js";
import { plan, schedulePeriodic, sync, type TaskData } from "./execute.js";
import { secretsDocument } from "./policy.js";
import { syncCommand } from "./commands.js";
import { secretsConsole } from "./console.js";

/** Events that concern the secrets policy only in the admin repository, where its documents live. */
const ADMIN_REPOSITORY_EVENTS = new Set(["push", "pull_request", "merge_group"]);

export default defineHandler({
  name: "secrets",
  commands: [syncCommand],
  console: secretsConsole,
  events: [
    "push",
    ...PLAN_PULL_REQUEST_ACTIONS.map((action) => `pull_request.${action}` as const),
    "merge_group.checks_requested",
    "repository.created",
    "installation.created",
    "installation_repositories.added",
  ],
  // A push, pull request or merge group elsewhere than the admin repository is never a trigger
  // (decide.ts): such a delivery, most of an organisation's pushes, is settled at the intake.
  takes(delivery, config) {
    if (!ADMIN_REPOSITORY_EVENTS.has(delivery.event) || delivery.repository === undefined) return true;
    const slash = delivery.repository.indexOf("/");
    if (slash <= 0) return true;
    return isAdminRepo(config.adminRepo, delivery.repository.slice(0, slash), delivery.repository.slice(slash + 1));
  },
  documents: [secretsDocument],

  async handle(ctx) {
    const decision = await decideDelivery(ctx);
    if (decision.decision === "skip") return { status: "skipped", reason: decision.reasons.join("; ") };
    if (decision.decision === "plan") return plan(ctx, decision);
    const event: string = ctx.name;
    if (event === "installation" && ctx.installationId) await schedulePeriodic(ctx, ctx.installationId, decision.org);
    return sync(ctx, decision);
  },

  async onTask(ctx) {
    const data = ctx.data as TaskData;
    // Schedule the next period first: a failing sync must not end the schedule.
    if (data.kind === "periodic" && ctx.installationId) await schedulePeriodic(ctx, ctx.installationId, data.org);
    return sync(ctx, { decision: "sync", org: data.org, onlyRepos: data.onlyRepos, reasons: [data.kind] });
  },

  async start(ctx) {
    const app = await ctx.appOctokit();
    for (let page = 1; page <= 100; page++) {
      const res = await app.request("GET /app/installations", { per_page: 100, page });
      for (const inst of res.data) {
        if (inst.suspended_at || !inst.account) continue;
        const account = inst.account as { login?: string; slug?: string };
        const login = account.login ?? account.slug;
        if (login) await schedulePeriodic(ctx, inst.id, login);
      }
      if (res.data.length < 100) break;
    }
  },
});
