// Every console route, as every kind of person, over real HTTP against the sandbox stack: the
// console decides by the delivery's own installation and repository, never by what the person
// holds elsewhere. A second organisation, `globex`, has a private repository `vault` only its
// owner and `gary` reach; `octo-admin` owns `acme` and is a plain member of `globex`. Also:
// sign-out revokes the session in the store (a fresh console on the same store refuses it too),
// live streams and requests are bounded per person, and malformed paths are a 400 with no error log.
import { request as httpRequest, createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { BROAD_GRANT } from "@steward/sandbox-hub";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxStack } from "../../src/sandbox/stack.js";
import { ApiBudget, mountConsole } from "../../src/console/mount.js";
import { MAX_IN_FLIGHT_PER_LOGIN, revokedKey } from "../../src/console/console.js";
import { MAX_STREAMS_PER_LOGIN } from "../../src/console/live.js";
import { consoleWorld, type ConsoleWorld } from "./fixtures.js";
import { signIn, Visitor, type Answer } from "./session.js";

const ORG = "globex";
const lines: { level: number; component?: string; msg?: string; time: number }[] = [];
const logger = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line)) });

let world: ConsoleWorld;
let stack: SandboxStack;
let base: string;
const settle = () => world.settle();

/** The deliveries the table is about. */
const ids = { vault: "", site: "", install: "", acmeDead: "" };

type Persona = "owner" | "crossOwner" | "vaultMember" | "member" | "outsider" | "signedOut" | "revoked";
const PERSONAS: Persona[] = ["owner", "crossOwner", "vaultMember", "member", "outsider", "signedOut", "revoked"];
const LOGINS: Partial<Record<Persona, string>> = {
  owner: "globex-owner",
  crossOwner: "octo-admin",
  vaultMember: "gary",
  member: "gwen",
  outsider: "contributor",
};
const visitors = {} as Record<Persona, Visitor>;
const csrfs = {} as Record<Persona, string>;

async function pushId(repo: string, message: string): Promise<string> {
  stack.hub.control.pushFiles({ owner: ORG, repo, files: { [`${Date.now()}.txt`]: message }, message });
  await settle();
  const page = await stack.steward.store.browse.browseDeliveries({
    limit: 5,
    repository: `${ORG}/${repo}`,
    event: "push",
  });
  return page.items[0]!.id;
}

beforeAll(async () => {
  world = await consoleWorld({ logger });
  stack = world.stack;
  base = world.base;
  const hub = stack.hub.control;
  hub.createOrg(ORG, { members: ["octo-admin", "gary", "gwen"], owners: ["globex-owner"] });
  hub.createRepo({ owner: ORG, name: "site" });
  hub.createRepo({ owner: ORG, name: "vault", private: true, files: { "keys.txt": "restricted\n" } });
  hub.restrictRepo(ORG, "vault", ["gary"]);
  const inst = hub.install(ORG, {
    permissions: { ...BROAD_GRANT.permissions },
    repositories: "all",
    events: [...BROAD_GRANT.events],
  });
  hub.pushFiles({ owner: "acme", repo: "service-billing", files: { "rates.txt": "2\n" }, message: "break the rates" });
  await settle();
  ids.vault = await pushId("vault", "break the vault");
  ids.site = await pushId("site", "docs for the site");
  const installs = await stack.steward.store.browse.browseDeliveries({ limit: 50, event: "installation" });
  ids.install = installs.items.find((d) => d.installationId === inst.id)!.id;
  ids.acmeDead = (
    await stack.steward.store.browse.browseDeliveries({ limit: 5, repository: "acme/service-billing", status: "dead" })
  ).items[0]!.id;
  // The installation event (no repository) lists the restricted repository: what must not leak.
  expect((await stack.steward.store.deliveries.getDelivery(ids.install))!.delivery.payload).toContain("globex/vault");
  expect(
    (
      await stack.steward.store.browse.browseDeliveries({ limit: 5, repository: `${ORG}/vault`, status: "dead" })
    ).items.map((d) => d.id),
  ).toEqual([ids.vault]);

  for (const p of PERSONAS) {
    const login = LOGINS[p];
    if (login) {
      visitors[p] = await signIn(base, login);
      csrfs[p] = visitors[p].csrfFrom((await visitors[p].request("/console")).text);
    }
  }
  visitors.signedOut = new Visitor(base);
  csrfs.signedOut = "none";
  // Revoked: an owner's session, signed out, whose cookie is kept and sent again.
  const leaving = await signIn(base, "globex-owner");
  const kept = leaving.cookies.get("steward_session")!;
  csrfs.revoked = leaving.csrfFrom((await leaving.request("/console")).text);
  expect((await leaving.request("/console/logout", { form: { csrf: csrfs.revoked } })).status).toBe(303);
  visitors.revoked = new Visitor(base);
  visitors.revoked.cookies.set("steward_session", kept);
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

// What each person gets: a status, and for 303 answers where they were sent.
type Expect = number | "login" | `replayed=${0 | 1}` | "acknowledged=1";
interface Row {
  name: string;
  method?: "POST";
  path: () => string;
  form?: Record<string, string>;
  expect: Record<Persona, Expect>;
  /** Text only `readers` find in the answer (everyone else gets a page without it, or none). */
  secret?: () => string;
  readers?: Persona[];
}

const anyoneIn = (status: Expect, out: Expect = "login"): Record<Persona, Expect> => ({
  owner: status,
  crossOwner: status,
  vaultMember: status,
  member: status,
  outsider: status,
  signedOut: out,
  revoked: out,
});

/** An action only the delivery's organisation owner may take: everyone else is refused (403). */
const ownerActs = (owner: Expect): Record<Persona, Expect> => ({
  ...anyoneIn(403, 403),
  owner,
});

const ROUTES: Row[] = [
  { name: "overview", path: () => "/console", expect: anyoneIn(200, 200) },
  {
    name: "deliveries filtered to the restricted repository",
    path: () => `/console/deliveries?repository=${ORG}%2Fvault`,
    expect: anyoneIn(200),
    secret: () => ids.vault,
    readers: ["owner", "vaultMember"],
  },
  {
    name: "deliveries, everything",
    path: () => "/console/deliveries",
    expect: anyoneIn(200),
    secret: () => ids.vault,
    readers: ["owner", "vaultMember"],
  },
  {
    name: "a restricted repository's delivery",
    path: () => `/console/deliveries/${ids.vault}`,
    expect: {
      owner: 200,
      crossOwner: 404,
      vaultMember: 200,
      member: 404,
      outsider: 404,
      signedOut: "login",
      revoked: "login",
    },
    secret: () => "break the vault",
    readers: ["owner", "vaultMember"],
  },
  {
    name: "its payload",
    path: () => `/console/deliveries/${ids.vault}?payload=1`,
    expect: {
      owner: 200,
      crossOwner: 404,
      vaultMember: 200,
      member: 404,
      outsider: 404,
      signedOut: "login",
      revoked: "login",
    },
    secret: () => "&#34;head_commit&#34;",
    readers: ["owner", "vaultMember"],
  },
  {
    name: "the installation event (no repository; lists the restricted one)",
    path: () => `/console/deliveries/${ids.install}`,
    expect: {
      owner: 200,
      crossOwner: 404,
      vaultMember: 404,
      member: 404,
      outsider: 404,
      signedOut: "login",
      revoked: "login",
    },
  },
  {
    name: "its payload",
    path: () => `/console/deliveries/${ids.install}?payload=1`,
    expect: {
      owner: 200,
      crossOwner: 404,
      vaultMember: 404,
      member: 404,
      outsider: 404,
      signedOut: "login",
      revoked: "login",
    },
    secret: () => "globex/vault",
    readers: ["owner"],
  },
  {
    name: "another organisation's delivery (acme's dead letter)",
    path: () => `/console/deliveries/${ids.acmeDead}`,
    expect: {
      owner: 404,
      crossOwner: 200,
      vaultMember: 404,
      member: 404,
      outsider: 404,
      signedOut: "login",
      revoked: "login",
    },
  },
  {
    name: "dead letters",
    path: () => "/console/dead",
    expect: {
      owner: 200,
      crossOwner: 200,
      vaultMember: 403,
      member: 403,
      outsider: 403,
      signedOut: "login",
      revoked: "login",
    },
    secret: () => ids.vault,
    readers: ["owner"],
  },
  { name: "deployments", path: () => "/console/deployments", expect: anyoneIn(200) },
  {
    name: "flaky jobs of the restricted repository",
    path: () => `/console/flakes?repo=${ORG}/vault`,
    expect: anyoneIn(200),
  },
  {
    name: "secrets",
    path: () => "/console/secrets",
    expect: {
      owner: 200,
      crossOwner: 200,
      vaultMember: 403,
      member: 403,
      outsider: 403,
      signedOut: "login",
      revoked: "login",
    },
    secret: () => `id="org-${ORG}"`,
    readers: ["owner"],
  },
  {
    name: "the restricted repository's policy",
    path: () => `/console/policies/${ORG}/vault`,
    expect: {
      owner: 200,
      crossOwner: 404,
      vaultMember: 200,
      member: 404,
      outsider: 404,
      signedOut: "login",
      revoked: "login",
    },
  },
  {
    name: "live deliveries (a login that can see no repository gets no stream)",
    path: () => "/console/events?view=deliveries",
    expect: {
      owner: 200,
      crossOwner: 200,
      vaultMember: 200,
      member: 200,
      outsider: 403,
      signedOut: "login",
      revoked: "login",
    },
  },
  {
    name: "replay the restricted repository's dead letter",
    method: "POST",
    path: () => `/console/deliveries/${ids.vault}/replay`,
    form: { back: "/console/dead" },
    expect: ownerActs("replayed=1"),
  },
  {
    name: "replay the installation event",
    method: "POST",
    path: () => `/console/deliveries/${ids.install}/replay`,
    form: {},
    expect: ownerActs("replayed=1"),
  },
  {
    name: "replay all dead letters of the restricted repository",
    method: "POST",
    path: () => "/console/dead/replay",
    form: { repository: `${ORG}/vault` },
    // The acme owner is told nothing matches (a page, no confirmation to give).
    expect: {
      owner: "replayed=1",
      crossOwner: 200,
      vaultMember: 403,
      member: 403,
      outsider: 403,
      signedOut: 403,
      revoked: 403,
    },
  },
  {
    name: "replay all dead letters, no filter",
    method: "POST",
    path: () => "/console/dead/replay",
    form: {},
    // The acme owner replays acme's dead letter, never globex's.
    expect: {
      owner: "replayed=1",
      crossOwner: "replayed=1",
      vaultMember: 403,
      member: 403,
      outsider: 403,
      signedOut: 403,
      revoked: 403,
    },
  },
  {
    // Last: acknowledging leaves it out of "replay all" (the replays above left it dead again).
    name: "acknowledge the restricted repository's dead letter",
    method: "POST",
    path: () => `/console/deliveries/${ids.vault}/acknowledge`,
    form: { back: "/console/dead", reason: "never to run" },
    expect: ownerActs("acknowledged=1"),
  },
];

async function ask(p: Persona, row: Row): Promise<Answer> {
  const v = visitors[p];
  if (row.method === "POST") {
    const form = { csrf: csrfs[p], ...row.form };
    const first = await v.request(row.path(), { form });
    // "Replay all" asks to confirm the set it names: confirmed as shown, as a person would.
    const confirmed = /name="confirmed" value="([^"]+)"/.exec(first.text)?.[1];
    if (first.status === 200 && confirmed) return v.request(row.path(), { form: { ...form, confirmed } });
    return first;
  }
  if (row.path().startsWith("/console/events")) {
    // A stream: its status and first event, then let go.
    const res = await fetch(`${base}${row.path()}`, {
      redirect: "manual",
      headers: v.cookies.size ? { cookie: v.cookieHeader() } : {},
    });
    let text = "";
    if (res.status === 200) {
      const reader = res.body!.getReader();
      while (!text.includes("event: fragment")) {
        const chunk = await reader.read();
        if (chunk.done) break;
        text += new TextDecoder().decode(chunk.value);
      }
      await reader.cancel();
    } else text = await res.text();
    return { status: res.status, headers: res.headers, text };
  }
  return v.request(row.path());
}

function outcome(answer: Answer): Expect {
  if (answer.status !== 303) return answer.status;
  const location = answer.headers.get("location") ?? "";
  if (location.startsWith("/console/login")) return "login";
  const replayed = /[?&](replayed=[01]|acknowledged=1)$/.exec(location)?.[1];
  return (replayed as Expect | undefined) ?? answer.status;
}

describe("every console route, as every kind of person", () => {
  for (const row of ROUTES) {
    it(`${row.method ?? "GET"} ${row.name}`, async () => {
      const got: Partial<Record<Persona, Expect>> = {};
      const found: Persona[] = [];
      const ranFor: Persona[] = [];
      // The owner of the right organisation goes last: their replays must not change what the others find.
      for (const p of [...PERSONAS.filter((x) => x !== "owner"), "owner" as const]) {
        const runs = world.pushRuns();
        const answer = await ask(p, row);
        got[p] = outcome(answer);
        if (row.secret && answer.text.includes(row.secret())) found.push(p);
        if (row.method === "POST") {
          await settle();
          if (world.pushRuns() !== runs) ranFor.push(p);
        }
      }
      expect(got).toEqual(row.expect);
      if (row.secret) expect(found.sort()).toEqual([...row.readers!].sort());
      // A push ran again only for those whose replay was accepted.
      if (row.method === "POST") expect(ranFor.every((p) => row.expect[p] === "replayed=1")).toBe(true);
    });
  }
});

describe("sign-out revokes the session on the server", () => {
  it("a kept cookie opens nothing after sign-out, here or in a fresh console on the same store (a restart, another replica)", async () => {
    const gary = await signIn(base, "gary");
    const other = await signIn(base, "gary");
    const kept = gary.cookies.get("steward_session")!;
    const csrf = gary.csrfFrom((await gary.request("/console")).text);
    // A live stream of the session ends with it.
    const stream = await fetch(`${base}/console/events?view=overview`, { headers: { cookie: gary.cookieHeader() } });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    await reader.read();
    expect((await gary.request("/console/logout", { form: { csrf } })).status).toBe(303);
    for (;;) if ((await reader.read()).done) break;

    const replay = new Visitor(base);
    replay.cookies.set("steward_session", kept);
    const after = await replay.request(`/console/deliveries/${ids.vault}`);
    expect(after.status).toBe(303);
    expect(after.headers.get("location")).toMatch(/^\/console\/login/);
    expect((await replay.request(`/console/deliveries/${ids.vault}/replay`, { form: { csrf } })).status).toBe(403);
    // The other session of the same person stands.
    expect((await other.request(`/console/deliveries/${ids.vault}`)).status).toBe(200);

    // A second console, nothing in memory, the same store and key: it refuses the revoked cookie and opens the other.
    const routes = mountConsole({
      config: stack.config,
      store: stack.steward.store,
      depth: async () => 0,
      replay: async () => undefined,
      handlers: [],
      budget: new ApiBudget(),
      baseUrl: () => base,
      logger: pino({ level: "silent" }),
    });
    const server: Server = createServer((req, res) => void routes.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const fresh = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const revoked = await fetch(`${fresh}/console/deliveries`, {
        redirect: "manual",
        headers: { cookie: `steward_session=${kept}` },
      });
      expect(revoked.status).toBe(303);
      expect(revoked.headers.get("location")).toMatch(/^\/console\/login/);
      const standing = await fetch(`${fresh}/console/deliveries`, {
        redirect: "manual",
        headers: { cookie: other.cookieHeader() },
      });
      expect(standing.status).toBe(200);
    } finally {
      routes.close();
      await new Promise((resolve) => server.close(resolve));
    }
    // The record is in the store's key/value space (this session's, and the table's revoked one).
    expect((await stack.steward.store.kv.list(revokedKey(""))).length).toBeGreaterThanOrEqual(2);
  });
});

describe("per-person bounds", () => {
  it(`one login holds at most ${MAX_STREAMS_PER_LOGIN} live streams; others still get theirs; a login without repositories gets none`, async () => {
    const owner = await signIn(base, "globex-owner");
    const open = async (v: Visitor) =>
      fetch(`${base}/console/events?view=overview`, { headers: { cookie: v.cookieHeader() } });
    const held: Response[] = [];
    for (let i = 0; i < MAX_STREAMS_PER_LOGIN; i++) {
      held.push(await open(owner));
      expect(held[i]!.status).toBe(200);
    }
    // Another session of the same person counts against the same bound.
    const again = await signIn(base, "globex-owner");
    const refused = await open(again);
    expect(refused.status).toBe(429);
    await refused.text();
    // An outsider with no repository: never a stream, however many they ask for.
    for (let i = 0; i < 5; i++) {
      const r = await open(visitors.outsider);
      expect(r.status).toBe(403);
      await r.text();
    }
    const other = await open(visitors.vaultMember);
    expect(other.status).toBe(200);
    await other.body!.cancel();
    // One stream let go: the owner may open another.
    await held.pop()!.body!.cancel();
    await expect
      .poll(
        async () => {
          const r = await open(owner);
          if (r.status === 200) held.push(r);
          else await r.text();
          return r.status;
        },
        { timeout: 10_000, interval: 200 },
      )
      .toBe(200);
    for (const r of held) await r.body!.cancel();
  });

  it("one person's requests in flight are bounded; another person is served meanwhile", async () => {
    const owner = await signIn(base, "globex-owner");
    const target = new URL(base);
    // Requests held open by a form body that is still arriving: each is in flight until it does.
    const pending = Array.from({ length: MAX_IN_FLIGHT_PER_LOGIN }, () => {
      const req = httpRequest({
        host: target.hostname,
        port: target.port,
        path: "/console/dead/replay",
        method: "POST",
        headers: {
          cookie: owner.cookieHeader(),
          "content-type": "application/x-www-form-urlencoded",
          "content-length": "64",
        },
      });
      const answered = new Promise<number>((resolve, reject) => {
        req.on("response", (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", reject);
      });
      req.write("csrf=");
      return { req, answered };
    });
    await expect
      .poll(async () => (await owner.request("/console/deliveries")).status, { timeout: 10_000, interval: 100 })
      .toBe(429);
    expect((await visitors.vaultMember.request("/console/deliveries")).status).toBe(200);
    for (const p of pending) p.req.end("x".repeat(59));
    // Wrong CSRF: each refused, and nothing replayed.
    expect(await Promise.all(pending.map((p) => p.answered))).toEqual(Array(MAX_IN_FLIGHT_PER_LOGIN).fill(403));
    expect((await owner.request("/console/deliveries")).status).toBe(200);
  });
});

describe("malformed input", () => {
  const BAD = [
    "/console/deliveries/%E0%A4%A",
    "/console/deliveries/%",
    "/console/deliveries/%ZZ?payload=1",
    `/console/deliveries/${"a".repeat(200)}`,
    "/console/deliveries/%3Cscript%3E",
    "/console/deliveries/a%2Fb",
    "/console/policies/%zz/web",
    "/console/policies/ac%2Fme/web",
    "/console/policies/acme/%2E%2E%2F%2E%2E",
    `/console/deliveries?event=${"x".repeat(5_000)}`,
    `/console/flakes?repo=${"%41".repeat(2_000)}`,
  ];

  it("answers 400 to bad escapes, ids, names and overlong addresses, signed in or not, and logs no warning or error", async () => {
    const owner = await signIn(base, "globex-owner");
    const csrf = owner.csrfFrom((await owner.request("/console")).text);
    const from = Date.now();
    const seen: string[] = [];
    for (const path of BAD) {
      for (const v of [owner, new Visitor(base)]) {
        const answer = await v.request(path);
        seen.push(`${answer.status} ${path.slice(0, 40)}`);
        expect(answer.text).not.toContain("<script>");
      }
    }
    for (const path of ["/console/deliveries/%ff/replay", "/console/deliveries/%3Cx%3E/replay"]) {
      const answer = await owner.request(path, { form: { csrf } });
      seen.push(`${answer.status} POST ${path}`);
    }
    expect(seen.filter((s) => !s.startsWith("400 "))).toEqual([]);
    // The console still serves the same person afterwards.
    expect((await owner.request("/console/deliveries")).status).toBe(200);
    const loud = lines.filter(
      (l) => l.time >= from && l.level >= 40 && (l.component === "console" || l.component === "http"),
    );
    expect(loud).toEqual([]);
  });
});
