// What the API client coordinates through when the service runs as one process: write slots
// and installation tokens in this process's memory.
import type { ClientCoordination } from "../api/types.js";
import { createLocalWriteSlots, type LocalWriteSlots } from "./local-write-slots.js";
import { createTokenCache } from "./token-cache.js";

export function inProcessCoordination(): ClientCoordination & { writeSlots: LocalWriteSlots } {
  return { writeSlots: createLocalWriteSlots(), tokens: createTokenCache() };
}
