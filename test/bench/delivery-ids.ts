// X-GitHub-Delivery values shaped as GitHub's: time-based (version 1) GUIDs, as in GitHub's own
// examples (58474f00-b361-11eb-836d-0e4f3503ccbe). Consecutive ones share their leading digits
// for minutes at a time, so a store indexing them writes near one place; random (version 4) ids
// land anywhere, one index page each (analysis.md). BENCH_DELIVERY_IDS=random sends those instead.
import { randomBytes, randomUUID } from "node:crypto";

/** 100-ns intervals from the start of the Gregorian calendar (1582-10-15) to the Unix epoch. */
const GREGORIAN_OFFSET = 0x01b21dd213814000n;
const node = randomBytes(6);
node[0]! |= 0x01; // a random node id has the multicast bit set (RFC 9562, 6.10)
const nodeHex = node.toString("hex");
const clockSeq = randomBytes(2).readUInt16BE(0) & 0x3fff;
let lastTicks = 0n;

/** A version-1 GUID for now; strictly increasing timestamps within this process. */
export function timeBasedId(now = Date.now()): string {
  let ticks = BigInt(now) * 10_000n + GREGORIAN_OFFSET;
  if (ticks <= lastTicks) ticks = lastTicks + 1n;
  lastTicks = ticks;
  const low = (ticks & 0xffffffffn).toString(16).padStart(8, "0");
  const mid = ((ticks >> 32n) & 0xffffn).toString(16).padStart(4, "0");
  const high = (((ticks >> 48n) & 0x0fffn) | 0x1000n).toString(16).padStart(4, "0");
  const seq = (clockSeq | 0x8000).toString(16).padStart(4, "0");
  return `${low}-${mid}-${high}-${seq}-${nodeHex}`;
}

export type DeliveryIdForm = "time-based" | "random";
export const deliveryIdForm: DeliveryIdForm = process.env.BENCH_DELIVERY_IDS === "random" ? "random" : "time-based";

/** The id of each request the bench sends: GitHub's form, or random with BENCH_DELIVERY_IDS=random. */
export const deliveryId: () => string = deliveryIdForm === "random" ? () => randomUUID() : () => timeBasedId();

