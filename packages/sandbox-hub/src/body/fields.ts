// Optional fields of a request body: absent or null is undefined, a value of the wrong type is
// 422 `invalid` naming the resource and field.
import { validationFailed } from "../core/errors.js";

export function optionalString(
  body: Record<string, unknown> | undefined,
  resource: string,
  field: string,
): string | undefined {
  const v = body?.[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw validationFailed(resource, field, "invalid");
  return v;
}

export function optionalBoolean(
  body: Record<string, unknown> | undefined,
  resource: string,
  field: string,
): boolean | undefined {
  const v = body?.[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw validationFailed(resource, field, "invalid");
  return v;
}
