/** True when `output` (a file of dist/) or the sandbox hub's build is missing or older than a source file. */
export function compiledIsStale(root: URL, output: URL): boolean;
