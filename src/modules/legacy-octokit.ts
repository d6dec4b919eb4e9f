// Octokit 15/16-era REST method names (Probot 7/8 apps) are refused when a hosted module loads,
// naming the file, the line, the old call and what replaced it, instead of failing only when a
// delivery reaches the call (`... is not a function`). The scan reads the module's entry and the
// local files it requires or imports (relative specifiers; never its dependencies) as text: a
// call on a client named `github` or `octokit` (`context.github.pullRequests.createComment`,
// `octokit.rest.issues.getComments`) to a REST namespace's method the Octokit Steward supplies
// (@octokit/plugin-rest-endpoint-methods) does not have, and a `number` parameter written in the
// call where the method now takes `issue_number` or `pull_number`.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { Octokit } from "@octokit/core";
import { restEndpointMethods } from "@octokit/plugin-rest-endpoint-methods";

/**
 * Octokit 15/16 names (`@octokit/rest` 15 and 16, what Probot 7 to 9 supplied) that later majors
 * renamed or removed, and the method that does the same today. Every replacement is a method of
 * the supplied Octokit (a test holds the table to it). Whole namespaces renamed (`pullRequests`,
 * `gitdata`) map method by method through NAMESPACES when the name stayed the same.
 */
export const LEGACY_METHODS: Readonly<Record<string, string>> = {
  "apps.get": "apps.getAuthenticated",
  "apps.getForSlug": "apps.getBySlug",
  "apps.getInstallations": "apps.listInstallations",
  "apps.getInstallationRepositories": "apps.listReposAccessibleToInstallation",
  "apps.listRepos": "apps.listReposAccessibleToInstallation",
  "apps.createInstallationToken": "apps.createInstallationAccessToken",
  "apps.findRepoInstallation": "apps.getRepoInstallation",
  "apps.findOrgInstallation": "apps.getOrgInstallation",
  "apps.findUserInstallation": "apps.getUserInstallation",
  "issues.edit": "issues.update",
  "issues.editComment": "issues.updateComment",
  "issues.editLabel": "issues.updateLabel",
  "issues.getAll": "issues.list",
  "issues.getForRepo": "issues.listForRepo",
  "issues.getForOrg": "issues.listForOrg",
  "issues.getForUser": "issues.listForAuthenticatedUser",
  "issues.getComments": "issues.listComments",
  "issues.getCommentsForRepo": "issues.listCommentsForRepo",
  "issues.getLabels": "issues.listLabelsForRepo",
  "issues.getIssueLabels": "issues.listLabelsOnIssue",
  "issues.replaceAllLabels": "issues.setLabels",
  "issues.getMilestones": "issues.listMilestones",
  "issues.listMilestonesForRepo": "issues.listMilestones",
  "issues.getMilestoneLabels": "issues.listLabelsForMilestone",
  "issues.getEvents": "issues.listEvents",
  "issues.getEventsForRepo": "issues.listEventsForRepo",
  "issues.getEventsTimeline": "issues.listEventsForTimeline",
  "issues.getAssignees": "issues.listAssignees",
  "issues.checkAssignee": "issues.checkUserCanBeAssigned",
  "issues.addAssigneesToIssue": "issues.addAssignees",
  "issues.removeAssigneesFromIssue": "issues.removeAssignees",
  "issues.removeLabels": "issues.removeAllLabels",
  "pullRequests.getAll": "pulls.list",
  "pullRequests.getFiles": "pulls.listFiles",
  "pullRequests.getCommits": "pulls.listCommits",
  "pullRequests.getComments": "pulls.listReviewComments",
  "pullRequests.listComments": "pulls.listReviewComments",
  "pullRequests.getComment": "pulls.getReviewComment",
  "pullRequests.createComment": "pulls.createReviewComment",
  "pullRequests.createCommentReply": "pulls.createReplyForReviewComment",
  "pullRequests.editComment": "pulls.updateReviewComment",
  "pullRequests.updateComment": "pulls.updateReviewComment",
  "pullRequests.deleteComment": "pulls.deleteReviewComment",
  "pullRequests.getReviews": "pulls.listReviews",
  "pullRequests.createReviewRequest": "pulls.requestReviewers",
  "pullRequests.deleteReviewRequest": "pulls.removeRequestedReviewers",
  "pullRequests.getReviewRequests": "pulls.listRequestedReviewers",
  "pullRequests.checkMerged": "pulls.checkIfMerged",
  "pullRequests.edit": "pulls.update",
  "pulls.createComment": "pulls.createReviewComment",
  "pulls.listComments": "pulls.listReviewComments",
  "pulls.getComment": "pulls.getReviewComment",
  "pulls.updateComment": "pulls.updateReviewComment",
  "pulls.deleteComment": "pulls.deleteReviewComment",
  "pulls.createReviewRequest": "pulls.requestReviewers",
  "pulls.deleteReviewRequest": "pulls.removeRequestedReviewers",
  "pulls.listReviewRequests": "pulls.listRequestedReviewers",
  "gitdata.getReference": "git.getRef",
  "gitdata.getReferences": "git.listMatchingRefs",
  "gitdata.getAllReferences": "git.listMatchingRefs",
  "gitdata.createReference": "git.createRef",
  "gitdata.updateReference": "git.updateRef",
  "gitdata.deleteReference": "git.deleteRef",
  "git.getReference": "git.getRef",
  "git.createReference": "git.createRef",
  "git.updateReference": "git.updateRef",
  "git.deleteReference": "git.deleteRef",
  "git.listRefs": "git.listMatchingRefs",
  "repos.edit": "repos.update",
  "repos.getAll": "repos.listForAuthenticatedUser",
  "repos.list": "repos.listForAuthenticatedUser",
  "repos.getForOrg": "repos.listForOrg",
  "repos.getForUser": "repos.listForUser",
  "repos.getPublic": "repos.listPublic",
  "repos.getContents": "repos.getContent",
  "repos.createFile": "repos.createOrUpdateFileContents",
  "repos.updateFile": "repos.createOrUpdateFileContents",
  "repos.createOrUpdateFile": "repos.createOrUpdateFileContents",
  "repos.getBranches": "repos.listBranches",
  "repos.getCommits": "repos.listCommits",
  "repos.getTags": "repos.listTags",
  "repos.getReleases": "repos.listReleases",
  "repos.editRelease": "repos.updateRelease",
  "repos.getContributors": "repos.listContributors",
  "repos.getLanguages": "repos.listLanguages",
  "repos.getTeams": "repos.listTeams",
  "repos.getForks": "repos.listForks",
  "repos.getCollaborators": "repos.listCollaborators",
  "repos.reviewUserPermissionLevel": "repos.getCollaboratorPermissionLevel",
  "repos.getStatuses": "repos.listCommitStatusesForRef",
  "repos.listStatusesForRef": "repos.listCommitStatusesForRef",
  "repos.createStatus": "repos.createCommitStatus",
  "repos.getHooks": "repos.listWebhooks",
  "repos.listHooks": "repos.listWebhooks",
  "repos.getHook": "repos.getWebhook",
  "repos.createHook": "repos.createWebhook",
  "repos.editHook": "repos.updateWebhook",
  "repos.updateHook": "repos.updateWebhook",
  "repos.deleteHook": "repos.deleteWebhook",
  "repos.getDeployments": "repos.listDeployments",
  "repos.getDeploymentStatuses": "repos.listDeploymentStatuses",
  "repos.getStatsContributors": "repos.getContributorsStats",
  "repos.getArchiveLink": "repos.downloadZipballArchive",
  "search.issues": "search.issuesAndPullRequests",
  "orgs.getAll": "orgs.list",
  "orgs.getForUser": "orgs.listForUser",
  "orgs.getMembers": "orgs.listMembers",
  "orgs.checkMembership": "orgs.checkMembershipForUser",
  "orgs.getOrgMembership": "orgs.getMembershipForUser",
  "orgs.getMembership": "orgs.getMembershipForUser",
  "orgs.addOrgMembership": "orgs.setMembershipForUser",
  "orgs.addOrUpdateMembership": "orgs.setMembershipForUser",
  "orgs.getTeams": "teams.list",
  "orgs.getTeam": "teams.getByName",
  "teams.get": "teams.getByName",
  "teams.getMembers": "teams.listMembersInOrg",
  "teams.listMembers": "teams.listMembersInOrg",
  "teams.getMembership": "teams.getMembershipForUserInOrg",
  "users.get": "users.getAuthenticated",
  "users.getForUser": "users.getByUsername",
  "users.getOrgs": "orgs.listForAuthenticatedUser",
};

/** Namespaces renamed whole: a method whose name stayed is the same method under the new namespace. */
const NAMESPACES: Readonly<Record<string, string>> = { pullRequests: "pulls", gitdata: "git" };

export interface LegacyCall {
  /** The file (absolute path) and the 1-based line of the call. */
  file: string;
  line: number;
  /** The call as written from its client (`github.pullRequests.createComment`). */
  call: string;
  /** What to write instead. */
  replacement: string;
}

/** Hosted modules that call Octokit 15/16 names: refused at load, every call named. */
export class LegacyOctokitError extends Error {
  constructor(readonly calls: readonly LegacyCall[]) {
    const where = (c: LegacyCall) => `${relative(process.cwd(), c.file) || c.file}:${c.line}`;
    super(
      `hosted code calls Octokit methods that no longer exist (Octokit 15/16 names; Steward supplies @octokit/core 7 ` +
        `with @octokit/plugin-rest-endpoint-methods 17):\n` +
        calls.map((c) => `  ${where(c)}: ${c.call}: ${c.replacement}`).join("\n"),
    );
    this.name = "LegacyOctokitError";
  }
}

interface Api {
  /** `namespace.method` of every method, and each one's URL template. */
  methods: Map<string, string>;
  namespaces: Set<string>;
}

let api: Api | undefined;

function currentApi(): Api {
  if (api) return api;
  const rest = (new (Octokit.plugin(restEndpointMethods))() as unknown as { rest: Record<string, object> }).rest;
  const methods = new Map<string, string>();
  for (const [ns, group] of Object.entries(rest))
    for (const [name, fn] of Object.entries(group as Record<string, { endpoint?: { DEFAULTS?: { url?: string } } }>))
      methods.set(`${ns}.${name}`, fn.endpoint?.DEFAULTS?.url ?? "");
  api = { methods, namespaces: new Set(Object.keys(rest)) };
  return api;
}

/** Whether `namespace.method` is a method of the Octokit Steward supplies. */
export function isCurrentMethod(name: string): boolean {
  return currentApi().methods.has(name);
}

/**
 * `source` with its comments blanked (line breaks kept, so positions and lines stay), and a copy
 * with string and template literals blanked too. Regular expression literals are told from
 * division by the token before them, the usual heuristic.
 */
export function blankComments(source: string): { code: string; bare: string } {
  const code = source.split("");
  const bare = source.split("");
  const blank = (from: number, to: number, which: string[][]) => {
    for (let k = from; k < to; k++) if (source[k] !== "\n") for (const w of which) w[k] = " ";
  };
  let i = 0;
  let last = "";
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const stop = end < 0 ? source.length : end;
      blank(i, stop, [code, bare]);
      i = stop;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end < 0 ? source.length : end + 2;
      blank(i, stop, [code, bare]);
      i = stop;
    } else if (
      c === '"' ||
      c === "'" ||
      c === "`" ||
      (c === "/" && (last === "" || /[(,=:[!&|?{};+\-*%<>~^]/.test(last)))
    ) {
      let j = i + 1;
      let inClass = false;
      while (j < source.length) {
        const d = source[j]!;
        if (d === "\\") j += 2;
        else if (c === "/" && d === "[") ((inClass = true), j++);
        else if (c === "/" && d === "]") ((inClass = false), j++);
        else if (d === c && !inClass) break;
        else if (d === "\n" && c !== "`") break;
        else j++;
      }
      blank(i + 1, j, [bare]);
      i = j + 1;
      last = "a";
    } else {
      if (!/\s/.test(c)) last = c;
      i++;
    }
  }
  return { code: code.join(""), bare: bare.join("") };
}

const LOCAL_SPECIFIER =
  /\brequire\s*\(\s*(["'])(\.{1,2}\/[^"'\n]+)\1\s*\)|\b(?:from|import)\s*\(?\s*(["'])(\.{1,2}\/[^"'\n]+)\3/g;

/** The file a relative specifier names, as Node (and tsx, for `.js` written for a `.ts` file) would find it. */
function resolveLocal(fromFile: string, specifier: string): string | undefined {
  const base = resolve(dirname(fromFile), specifier);
  const candidates = [
    base,
    ...[".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"].map((e) => base + e),
    ...(/\.[cm]?js$/.test(base) ? [base.replace(/js$/, "ts")] : []),
    ...["index.js", "index.cjs", "index.mjs", "index.ts"].map((f) => resolve(base, f)),
  ];
  return candidates.find((p) => existsSync(p) && statSync(p).isFile() && /\.[cm]?[jt]s$/.test(p));
}

const CALL = /\b(?:github|octokit)(?:\.rest)?\.([A-Za-z_$][\w$]*)\.([A-Za-z_$][\w$]*)(?![\w$])/g;

/** The top-level keys of the object literal `{ ... }` starting at `open` (in the blanked text), or none. */
function objectKeys(bare: string, open: number): string[] {
  if (bare[open] !== "{") return [];
  const keys: string[] = [];
  let depth = 0;
  let expectKey = true;
  for (let k = open; k < bare.length && k < open + 4000; k++) {
    const ch = bare[k]!;
    if ("{[(".includes(ch)) {
      depth++;
      if (depth === 1) expectKey = true;
      continue;
    }
    if ("}])".includes(ch)) {
      depth--;
      if (depth === 0) return keys;
      continue;
    }
    if (depth !== 1) continue;
    if (ch === ",") expectKey = true;
    else if (expectKey && /[A-Za-z_$]/.test(ch)) {
      const m = /^[A-Za-z_$][\w$]*/.exec(bare.slice(k))![0];
      const after = bare.slice(k + m.length).trimStart()[0];
      if (after === ":" || after === "," || after === "}") keys.push(m);
      expectKey = false;
      k += m.length - 1;
    } else if (!/\s/.test(ch) && ch !== ".") expectKey = false;
  }
  return [];
}

/** The Octokit 15/16 calls in one file's text. */
export function legacyCallsIn(file: string, source: string): LegacyCall[] {
  const { methods, namespaces } = currentApi();
  const { bare } = blankComments(source);
  const found: LegacyCall[] = [];
  const lineOf = (index: number) => source.slice(0, index).split("\n").length;
  for (const m of bare.matchAll(CALL)) {
    const [text, ns, method] = m as unknown as [string, string, string];
    if (!namespaces.has(ns) && !(ns in NAMESPACES)) continue;
    const name = `${ns}.${method}`;
    const line = lineOf(m.index);
    if (!methods.has(name)) {
      const renamed = LEGACY_METHODS[name] ?? (ns in NAMESPACES ? `${NAMESPACES[ns]}.${method}` : undefined);
      const replacement =
        renamed && methods.has(renamed)
          ? `use ${text.slice(0, text.length - name.length)}${renamed}`
          : `not a method of Octokit's REST API any more (see https://octokit.github.io/rest.js)`;
      found.push({ file, line, call: text, replacement });
      continue;
    }
    // Octokit 16's `number` became `issue_number` / `pull_number`: caught where the call writes it.
    const url = methods.get(name)!;
    const param = /\{(issue_number|pull_number)\}/.exec(url)?.[1];
    if (!param) continue;
    const rest = bare.slice(m.index + text.length);
    const open = /^\s*\(\s*/.exec(rest);
    if (open && objectKeys(bare, m.index + text.length + open[0].length).includes("number"))
      found.push({ file, line, call: `${text}({ number })`, replacement: `pass ${param} instead of number` });
  }
  return found;
}

/** Files scanned from one entry at most: a module graph larger than this is a bundle, read no further. */
const MAX_FILES = 500;

/** The Octokit 15/16 calls in the module at `entry` and the local files it requires or imports. */
export function legacyCalls(entry: string): LegacyCall[] {
  const seen = new Set<string>();
  const queue = [resolve(entry)];
  const found: LegacyCall[] = [];
  while (queue.length > 0 && seen.size < MAX_FILES) {
    const file = queue.shift()!;
    // Relative paths stay in the entry's package: one inside node_modules (a published app) is read, its dependencies are not.
    if (seen.has(file) || dependencyDepth(file) !== dependencyDepth(entry)) continue;
    seen.add(file);
    let source: string;
    try {
      source = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    found.push(...legacyCallsIn(file, source));
    const { code } = blankComments(source);
    for (const m of code.matchAll(LOCAL_SPECIFIER)) {
      const target = resolveLocal(file, (m[2] ?? m[4])!);
      if (target && !seen.has(target)) queue.push(target);
    }
  }
  return found;
}

const dependencyDepth = (path: string) =>
  resolve(path)
    .split(/[\\/]/)
    .filter((p) => p === "node_modules").length;
