// Error bodies exactly as the seeds' Errors table describes them.
import { HubError } from "./types.js";

export const DOCS_URL = "https://docs.github.com/rest";

export function errorBody(err: HubError): Record<string, unknown> {
  const body: Record<string, unknown> = { message: err.message };
  if (err.errors) body.errors = err.errors;
  body.documentation_url = DOCS_URL;
  body.status = String(err.status);
  return body;
}

export const notFound = () => new HubError(404, "Not Found");

/**
 * A route the sandbox does not serve: GitHub's 404 body, with the method and path named so an
 * app author sees what the sandbox is missing (the path is cut short: it comes from outside).
 */
export function noRoute(method: string, path: string): HubError {
  const shown = path.length > 200 ? `${path.slice(0, 200)}…` : path;
  return new HubError(404, `Not Found: the sandbox hub has no route for ${method} ${shown}`);
}
export const badCredentials = () => new HubError(401, "Bad credentials");

/** 422 `Validation Failed` with one `errors[]` entry. */
export function validationFailed(resource: string, field: string, code: string, message?: string): HubError {
  const error: { resource: string; field: string; code: string; message?: string } = { resource, field, code };
  if (message !== undefined) error.message = message;
  return new HubError(422, "Validation Failed", [error]);
}

/** Read a required string field from a body, or answer 422 `missing_field`. */
export function requireString(body: Record<string, unknown> | undefined, resource: string, field: string): string {
  const value = body?.[field];
  if (value === undefined || value === null) throw validationFailed(resource, field, "missing_field");
  if (typeof value !== "string") throw validationFailed(resource, field, "invalid");
  return value;
}
