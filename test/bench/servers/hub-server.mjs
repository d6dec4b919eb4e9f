// The live API behind the benchmarked Steward: the sandbox hub (compiled, plain node) in its own
// process, seeded with the demo world and the app installed with Steward's manifest grant. Its
// rate limit is lifted: a bench run sends tens of thousands of deliveries to one installation,
// and a 5,000-an-hour budget would turn the measurement into one of 403s. Prints `PORT=` (for
// child.ts) and one `WORLD=` JSON line: what steward-server.mjs needs to reach it and what the
// bench's payloads are mapped onto (installation, organisation, repository).
import { createHub } from "../../../dist/src/sandbox/hub.js";

const hub = await createHub({ port: 0, rateLimit: 1_000_000_000 });
const org = "acme";
const inst = hub.state.accounts.installationOn(org);
if (!inst) throw new Error(`the demo seed has no installation on ${org}`);
// The example payloads' pull requests are #2 (and #1 beside it): open them, so a handler reading
// a pull request's files finds one, as it would on GitHub.
for (const n of [1, 2]) hub.control.openPullRequest({ owner: org, repo: "web", head: `feature-${n}`, files: { [`src/feature-${n}.js`]: `export const f${n} = ${n};\n` }, title: `Feature ${n}`, author: "dev-dana" });
const read = async (path) => {
  const res = await fetch(`${hub.url}${path}`, { headers: { authorization: `token ${hub.control.userToken("octo-admin")}` } });
  if (!res.ok) throw new Error(`GET ${path}: ${res.status}`);
  return res.json();
};
const repo = await read(`/repos/${org}/web`);
const organization = await read(`/orgs/${org}`);
const world = {
  env: { GITHUB_API_URL: hub.env.GITHUB_API_URL, APP_ID: hub.env.APP_ID, PRIVATE_KEY_PATH: hub.env.PRIVATE_KEY_PATH },
  installation: { id: inst.id },
  organization: { login: organization.login, id: organization.id, node_id: organization.node_id },
  repository: { id: repo.id, node_id: repo.node_id, name: repo.name, full_name: repo.full_name, private: repo.private, owner: repo.owner },
};
process.stdout.write(`WORLD=${JSON.stringify(world)}\nPORT=${new URL(hub.url).port}\n`);
// The end-to-end section drives this hub from the bench's process (bench e2e: the hub in a
// process of its own, as GitHub is): calls to its control and domain functions, Steward's
// settings, the clock, and what it answered and delivered, trimmed to what the section reads.
const targets = { control: hub.control, domains: hub.domains };
const e2e = {
  call: ({ target, fn, args }) => {
    const [root, domain] = target.split(".");
    const object = domain ? targets[root][domain] : targets[root];
    const value = object[fn](...args);
    // A run's jobs are what the section reads of it (its id, and its jobs' ids).
    return value && typeof value === "object" && "id" in value ? { id: value.id, jobs: value.jobs?.map?.((j) => ({ id: j.id })) } : value ?? null;
  },
  // WEBHOOK_SECRET and the rest stay out of WORLD: the intake's Steward signs with the bench's own secret.
  stackEnv: () => ({ ...hub.env, STEWARD_REVIEWER_TOKEN: hub.control.userToken("release-manager") }),
  // Both clocks at one instant: performance.now() here, and the machine's monotonic clock under it.
  clock: () => ({ monotonicNs: process.hrtime.bigint().toString(), now: performance.now() }),
  requestsFrom: ({ from }) => hub.control.requests().slice(from).map((r) => ({ method: r.method, path: r.path, status: r.status, auth: r.auth, receivedAtHr: r.receivedAtHr })),
  // By the hub's ids (increasing), not by place: the hub keeps only its latest deliveries.
  deliveriesAfter: ({ id }) =>
    hub.control.deliveries().filter((d) => d.id > id).map((d) => ({
      id: d.id,
      guid: d.guid,
      event: d.event,
      action: d.payload?.action,
      runId: d.payload?.workflow_run?.id,
      callbackUrl: d.payload?.deployment_callback_url,
    })),
  lastDeliveryId: () => hub.control.deliveries().at(-1)?.id ?? 0,
};
process.on("message", (m) => {
  if (m && typeof m === "object" && typeof m.e2e === "string") {
    try {
      process.send?.({ result: e2e[m.e2e](m) });
    } catch (err) {
      process.send?.({ error: err instanceof Error ? err.message : String(err) });
    }
    return;
  }
  if (m === "usage") process.send?.({ rss: process.memoryUsage().rss, maxRss: process.resourceUsage().maxRSS * 1024, cpu: process.cpuUsage() });
  // API requests the hub answered, by who asked (installation, app, ...): the handlers' real work.
  if (m === "requests") {
    const byAuth = {};
    for (const r of hub.control.requests()) byAuth[`${r.auth} ${r.status}`] = (byAuth[`${r.auth} ${r.status}`] ?? 0) + 1;
    process.send?.(byAuth);
  }
});
process.on("SIGTERM", () => void hub.close().then(() => process.exit(0)));
