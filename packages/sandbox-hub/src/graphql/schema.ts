// The slice of GitHub's GraphQL schema the sandbox serves: a repository's commit history with
// each commit's associated pull requests (what release-drafter asks). Names and types follow
// GitHub's schema; a field outside this slice is a validation error, as an unknown field is there.
import { buildSchema } from "graphql";

export const schema = buildSchema(/* GraphQL */ `
  scalar GitTimestamp
  scalar DateTime
  scalar URI
  scalar GitObjectID

  interface Node { id: ID! }
  interface Actor { login: String! url: URI! }
  interface RepositoryOwner { login: String! url: URI! }
  interface GitObject { id: ID! oid: GitObjectID! }

  type User implements Actor & RepositoryOwner & Node { id: ID! login: String! url: URI! }
  type Organization implements Actor & RepositoryOwner & Node { id: ID! login: String! url: URI! }
  type Bot implements Actor & Node { id: ID! login: String! url: URI! }

  type PageInfo { hasNextPage: Boolean! hasPreviousPage: Boolean! endCursor: String startCursor: String }

  type GitActor { name: String email: String date: GitTimestamp user: User }

  type Label implements Node { id: ID! name: String! color: String! }
  type LabelConnection { totalCount: Int! nodes: [Label] pageInfo: PageInfo! }

  type PullRequest implements Node {
    id: ID!
    number: Int!
    title: String!
    body: String!
    url: URI!
    author: Actor
    baseRepository: Repository
    headRepository: Repository
    baseRefName: String!
    headRefName: String!
    isCrossRepository: Boolean!
    merged: Boolean!
    mergedAt: DateTime
    state: String!
    labels(first: Int, after: String): LabelConnection
  }
  type PullRequestConnection { totalCount: Int! nodes: [PullRequest] pageInfo: PageInfo! }

  type Commit implements GitObject & Node {
    id: ID!
    oid: GitObjectID!
    message: String!
    messageHeadline: String!
    committedDate: GitTimestamp!
    author: GitActor
    committer: GitActor
    history(first: Int, after: String, since: GitTimestamp, until: GitTimestamp, path: String): CommitHistoryConnection!
    associatedPullRequests(first: Int, after: String): PullRequestConnection
  }
  type CommitHistoryConnection { totalCount: Int! nodes: [Commit] pageInfo: PageInfo! }

  type Repository implements Node {
    id: ID!
    name: String!
    nameWithOwner: String!
    url: URI!
    owner: RepositoryOwner!
    object(expression: String, oid: GitObjectID): GitObject
  }

  type Query {
    repository(owner: String!, name: String!): Repository
  }
`);
