// ical.js and luxon, loaded the first time a calendar, a time zone or an instant is read rather than
// when the service starts. Most services and most deliveries never meet a calendar, and what a
// library leaves in the heap at start raises every full collection's threshold by a multiple of it
// (docs/decisions/0032-calendar-libraries-loaded-on-first-use.md). Read synchronously (Node's require
// of an ES module), as the policy's validation and the decisions are, and resolved as `import`
// resolves them: the one instance a hosted app importing either library gets too.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type ICAL from "ical.js";
import type * as Luxon from "luxon";

const load = createRequire(import.meta.url);
let icalModule: typeof ICAL | undefined;
let luxonModule: typeof Luxon | undefined;

/** ical.js's namespace (its default export). */
export function ical(): typeof ICAL {
  icalModule ??= (load(fileURLToPath(import.meta.resolve("ical.js"))) as { default: typeof ICAL }).default;
  return icalModule;
}

/** luxon's exports. */
export function luxon(): typeof Luxon {
  luxonModule ??= load(fileURLToPath(import.meta.resolve("luxon"))) as typeof Luxon;
  return luxonModule;
}
