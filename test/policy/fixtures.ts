// Small handler modules with policy sections, defined here so the policy tests do not
// depend on the real handlers' progress.
import { defineHandler, type HandlerModule } from "../../src/handler.js";
import { globError, textMatcherError } from "../../src/policy/patterns.js";

export interface RerunPolicy {
  enabled: boolean;
  max_attempts: number;
  branches: string[];
  rules: { log: string[]; jobs?: string[] }[];
}

export const rerunLike = defineHandler<RerunPolicy>({
  name: "rerun",
  events: [],
  policy: {
    key: "rerun",
    schema: {
      type: "object",
      additionalProperties: false,
      properties: {
        enabled: { type: "boolean" },
        max_attempts: { type: "integer", minimum: 1, maximum: 10 },
        branches: { type: "array", items: { type: "string" } },
        mode: { enum: ["failed", "all"] },
        rules: {
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["log"],
            properties: {
              log: { anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] },
              jobs: { type: "array", items: { type: "string" } },
            },
          },
        },
      },
    },
    defaults: { enabled: true, max_attempts: 2, branches: ["main"], rules: [] },
    check(value, report) {
      value.branches.forEach((b, i) => {
        const e = globError(b);
        if (e) report(["branches", i], e);
      });
      value.rules.forEach((r, i) =>
        [r.log].flat().forEach((l, j) => {
          const e = textMatcherError(l);
          if (e) report(["rules", i, "log", ...(Array.isArray(r.log) ? [j] : [])], e);
        }),
      );
      if (value.max_attempts > 5 && value.branches.includes("*"))
        report(["max_attempts"], "more than 5 attempts on every branch", "warning");
    },
  },
  async handle() {},
});

export const checksLike = defineHandler<{ config: boolean }>({
  name: "checks",
  events: [],
  policy: {
    key: "checks",
    schema: { type: "object", additionalProperties: false, properties: { config: { type: "boolean" } } },
    defaults: { config: true },
  },
  async handle() {},
});

export const secretsLike = defineHandler({
  name: "secrets",
  events: [],
  documents: [
    {
      path: ".github/steward/secrets.yml",
      adminOnly: true,
      schema: {
        type: "object",
        additionalProperties: false,
        properties: {
          secrets: {
            type: "array",
            items: {
              type: "object",
              additionalProperties: false,
              required: ["name", "repositories"],
              properties: {
                name: { type: "string", pattern: "^[A-Z_][A-Z0-9_]*$" },
                repositories: { type: "array", items: { type: "string" } },
              },
            },
          },
        },
      },
      defaults: { secrets: [] },
      check(value, report) {
        (value as { secrets: { repositories: string[] }[] }).secrets.forEach((s, i) =>
          s.repositories.forEach((r, j) => {
            const e = globError(r);
            if (e) report(["secrets", i, "repositories", j], e);
          }),
        );
      },
    },
  ],
  async handle() {},
});

export const testHandlers: readonly HandlerModule<any>[] = [rerunLike, checksLike, secretsLike];
