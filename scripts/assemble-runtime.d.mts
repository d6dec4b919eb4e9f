/** The files and folders the runtime stage copies from the build (besides node_modules). */
export declare const RUNTIME_FILES: string[];
/** Lays out in `dest` the Dockerfile's runtime tree from the checkout at `root` (built). */
export declare function assembleRuntime(root: string, dest: string, opts?: { fresh?: boolean }): void;
