/** V8 heap settings of the service (see heap-flags.js). */
export declare const HEAP_FLAGS: readonly string[];
/** Applies those V8 reads while running, unless given on the command line or in NODE_OPTIONS. */
export declare function applyHeapFlags(): void;
