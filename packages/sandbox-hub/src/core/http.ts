// Small helpers the domain routes share: numeric path parameters, the JSON body, query
// filters, and the answers the API gives without a body.
import type { HubRequest, HubResponse } from "./types.js";
import { HubError } from "./types.js";

/** Numeric path parameter; 404 when it is not a positive integer (the API treats it as a missing resource). */
export function intParam(req: HubRequest, name: string): number {
  const raw = req.params[name] ?? "";
  if (!/^\d+$/.test(raw)) throw new HubError(404, "Not Found");
  return Number(raw);
}

export function bodyOf(req: HubRequest): Record<string, unknown> {
  return req.body ?? {};
}

export function queryInt(req: HubRequest, name: string): number | null {
  const raw = req.query.get(name);
  return raw !== null && /^\d+$/.test(raw) ? Number(raw) : null;
}

export const ok = (body: unknown): HubResponse => ({ status: 200, body });
export const created = (body: unknown = {}): HubResponse => ({ status: 201, body });
export const noContent = (): HubResponse => ({ status: 204 });

/** 422 Validation Failed with one field error. */
export function invalidField(resource: string, field: string, code: string, message?: string): HubError {
  return new HubError(422, "Validation Failed", [{ resource, field, code, ...(message ? { message } : {}) }]);
}

/** An integer array field, or a 422 naming the field. */
export function intArray(body: Record<string, unknown>, field: string, resource: string): number[] {
  const v = body[field];
  if (v === undefined) throw invalidField(resource, field, "missing_field");
  if (!Array.isArray(v) || !v.every((x) => Number.isInteger(x))) throw invalidField(resource, field, "invalid");
  return v as number[];
}
