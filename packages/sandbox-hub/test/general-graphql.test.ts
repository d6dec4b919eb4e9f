// POST /graphql against the running hub: commit history with associated pull requests (the
// shape release-drafter asks), pagination, and GitHub's error answers for what it cannot serve.
import { describe, expect, it } from "vitest";
import { outcome, worldPerTest } from "./domain-helpers.js";

const world = worldPerTest();

const HISTORY = `query($owner: String!, $name: String!, $ref: String!, $after: String, $withBody: Boolean!) {
  repository(owner: $owner, name: $name) {
    nameWithOwner
    object(expression: $ref) {
      ... on Commit {
        history(first: 1, after: $after) {
          totalCount
          pageInfo { hasNextPage endCursor }
          nodes {
            oid
            message
            associatedPullRequests(first: 5) {
              nodes { number title merged body @include(if: $withBody) author { login __typename } baseRepository { nameWithOwner } labels(first: 10) { nodes { name } } }
            }
          }
        }
      }
    }
  }
}`;

describe("POST /graphql", () => {
  it("walks the default branch's history and finds the merged pull request of its merge commit", async () => {
    const pr = world().hub.control.openPullRequest({
      owner: "acme",
      repo: "web",
      head: "feature/x",
      title: "Add x",
      author: "dev-dana",
      files: { "x.txt": "x\n" },
    });
    await world().octokit.rest.issues.addLabels({
      owner: "acme",
      repo: "web",
      issue_number: pr.number,
      labels: ["feature"],
    });
    const merge = world().hub.control.mergePullRequest({ owner: "acme", repo: "web", number: pr.number });
    const vars = { owner: "acme", name: "web", ref: "main", withBody: false };

    const first = await world().octokit.graphql<any>(HISTORY, vars);
    const history = first.repository.object.history;
    expect(first.repository.nameWithOwner).toBe("acme/web");
    expect(history.totalCount).toBe(2);
    expect(history.pageInfo.hasNextPage).toBe(true);
    expect(history.nodes[0].oid).toBe(merge.sha);
    expect(history.nodes[0].associatedPullRequests.nodes).toEqual([
      {
        number: pr.number,
        title: "Add x",
        merged: true,
        author: { login: "dev-dana", __typename: "User" },
        baseRepository: { nameWithOwner: "acme/web" },
        labels: { nodes: [{ name: "feature" }] },
      },
    ]);

    const second = await world().octokit.graphql<any>(HISTORY, {
      ...vars,
      after: history.pageInfo.endCursor,
      withBody: true,
    });
    expect(second.repository.object.history.pageInfo.hasNextPage).toBe(false);
    expect(second.repository.object.history.nodes[0].message).toBe("Initial commit");
    expect(second.repository.object.history.nodes[0].associatedPullRequests.nodes).toEqual([]);
  });

  it("answers GitHub's errors: NOT_FOUND for an unknown repository, validation errors for fields it lacks, 401 without credentials", async () => {
    const missing = await outcome(
      world().octokit.request("POST /graphql", { query: `{ repository(owner: "acme", name: "nope") { name } }` }),
    );
    expect(missing.status).toBe(200);
    expect(missing.data).toEqual({
      data: { repository: null },
      errors: [
        {
          type: "NOT_FOUND",
          message: "Could not resolve to a Repository with the name 'acme/nope'.",
          locations: [{ line: 1, column: 3 }],
          path: ["repository"],
        },
      ],
    });
    const unknown = await outcome(world().octokit.request("POST /graphql", { query: `{ viewer { login } }` }));
    expect(unknown.status).toBe(200);
    expect(unknown.data.data).toBeUndefined();
    expect(unknown.data.errors[0].message).toMatch(/viewer/);
    const noQuery = await outcome(world().octokit.request("POST /graphql", {}));
    expect(noQuery.data.errors[0].message).toBe("A query attribute must be specified and must be a string.");
    const anonymous = await fetch(`${world().hub.url}/graphql`, {
      method: "POST",
      body: JSON.stringify({ query: '{ repository(owner: "acme", name: "web") { name } }' }),
    });
    expect(anonymous.status).toBe(401);
    const tooMany = await outcome(
      world().octokit.request("POST /graphql", {
        query: `{ repository(owner: "acme", name: "web") { object(expression: "main") { ... on Commit { history(first: 101) { totalCount } } } } }`,
      }),
    );
    expect(tooMany.data.errors[0]).toMatchObject({ type: "EXCESSIVE_PAGINATION" });
  });
});

describe("DELETE /repos/{owner}/{repo}/git/refs/{ref}", () => {
  it("deletes a branch (204), then answers 422 Reference does not exist", async () => {
    world().hub.control.pushFiles({ owner: "acme", repo: "web", branch: "topic", files: { "t.txt": "t\n" } });
    expect((await world().octokit.rest.git.deleteRef({ owner: "acme", repo: "web", ref: "heads/topic" })).status).toBe(
      204,
    );
    expect(
      (await outcome(world().octokit.rest.repos.getBranch({ owner: "acme", repo: "web", branch: "topic" }))).status,
    ).toBe(404);
    const again = await outcome(world().octokit.rest.git.deleteRef({ owner: "acme", repo: "web", ref: "heads/topic" }));
    expect(again).toMatchObject({ status: 422, message: "Reference does not exist" });
  });
});
