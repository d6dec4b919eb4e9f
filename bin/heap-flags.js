// V8 heap settings of the service, one list for every way it starts: `npm start` passes the
// semi-space size on node's command line, the bin applies the rest as it starts (so `steward start`
// has them too), and the benchmark's Steward server gets them all on its command line.
//
// Under intake load nearly everything a delivery allocates is garbage within milliseconds (heap
// used after a full GC stays ~25 MB), yet with V8's defaults the young generation grows to 2 x 16 MB
// and the old generation to 3-4x the live heap before a full GC: peak RSS 230+ MB against ~25 MB
// live. A 4 MB semi-space and a 60% old-generation growth step keep it near 150 MB for about 10%
// more CPU per delivery (test/bench/analysis.md, "Issue 17, memory").
import { setFlagsFromString } from "node:v8";

export const HEAP_FLAGS = ["--max-semi-space-size=4", "--heap-growing-percent=60"];

/**
 * Applies the settings V8 reads while running (the old generation's growth step). The semi-space
 * size is fixed when the heap is set up, so only node's command line or NODE_OPTIONS
 * (`--max-semi-space-size=4`) sets it. A flag already on the command line is left as given.
 */
export function applyHeapFlags() {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)].map((f) => f.split("=")[0].replace(/_/g, "-"));
  for (const flag of HEAP_FLAGS) {
    if (!given.includes(flag.split("=")[0])) setFlagsFromString(flag);
  }
}
