// Whose code a run runs: the comparison both the rerun and deployments handlers rely on.
import { describe, expect, it } from "vitest";
import { DELETED_FORK, forkOf } from "../../../handlers/shared/fork.js";

const web = { id: 1, full_name: "acme/web", name: "web", owner: { login: "acme" } };
const fork = { id: 2, full_name: "contributor/web", name: "web", owner: { login: "contributor" } };

describe("forkOf", () => {
  it.each([
    { name: "the repository's own code", head: web, base: web, want: null },
    { name: "a fork, by id", head: fork, base: web, want: "contributor/web" },
    {
      name: "ids win over names (a rename keeps the id)",
      head: { ...web, full_name: "acme/old-web" },
      base: web,
      want: null,
    },
    {
      name: "a fork, by full name when ids are missing",
      head: { full_name: "contributor/web" },
      base: { full_name: "acme/web" },
      want: "contributor/web",
    },
    {
      name: "names compare case-insensitively",
      head: { full_name: "ACME/Web" },
      base: { full_name: "acme/web" },
      want: null,
    },
    {
      name: "owner and name when full_name is missing",
      head: { name: "web", owner: { login: "contributor" } },
      base: { name: "web", owner: { login: "acme" } },
      want: "contributor/web",
    },
    {
      name: "owners alone",
      head: { owner: { login: "contributor" } },
      base: { owner: { login: "acme" } },
      want: "contributor/?",
    },
    { name: "a deleted fork (head repository null)", head: null, base: web, want: DELETED_FORK },
    { name: "no head repository in the payload: cannot tell", head: undefined, base: web, want: undefined },
    { name: "nothing comparable: cannot tell", head: { id: 2 }, base: { full_name: "acme/web" }, want: undefined },
  ])("$name", ({ head, base, want }) => {
    expect(forkOf(head, base)).toBe(want);
  });
});
