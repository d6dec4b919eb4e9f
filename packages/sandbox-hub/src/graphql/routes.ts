// `POST /graphql`: the schema slice in ./schema.ts, executed with graphql-js. Answers follow
// GitHub: 200 with `data` and/or `errors` (each with `message`, `locations`, `path` and, where
// GitHub gives one, `type`), 401 without credentials.
import { graphql, type GraphQLFormattedError } from "graphql";
import type { RouteTable } from "../core/router.js";
import { HubError } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";
import { schema } from "./schema.js";
import { rootValue } from "./values.js";

function githubError(e: GraphQLFormattedError): Record<string, unknown> {
  const { extensions, ...rest } = e;
  const type = extensions?.type;
  return { ...(typeof type === "string" ? { type } : {}), ...rest };
}

export function installGraphqlRoutes(hub: SandboxHub, router: RouteTable): void {
  router.add(
    "POST",
    "/graphql",
    async (req) => {
      if (req.auth.kind === "none") throw new HubError(401, "This endpoint requires you to be authenticated.");
      const body = req.body ?? {};
      if (typeof body.query !== "string" || body.query.trim() === "") {
        return {
          status: 200,
          body: { errors: [{ message: "A query attribute must be specified and must be a string." }] },
        };
      }
      const variables = body.variables;
      if (
        variables !== undefined &&
        variables !== null &&
        (typeof variables !== "object" || Array.isArray(variables))
      ) {
        return { status: 200, body: { errors: [{ message: "Variables are invalid JSON." }] } };
      }
      const result = await graphql({
        schema,
        source: body.query,
        rootValue: rootValue(hub, req),
        variableValues: (variables ?? undefined) as Record<string, unknown> | undefined,
        ...(typeof body.operationName === "string" ? { operationName: body.operationName } : {}),
      });
      const json: Record<string, unknown> = {};
      if (result.data !== undefined) json.data = result.data;
      if (result.errors?.length) json.errors = result.errors.map((e) => githubError(e.toJSON()));
      return { status: 200, body: json };
    },
    { auth: "any" },
  );
}
