import type { HandlerModule } from "../../../src/handler.js";

export function settingsFromEnv(env?: NodeJS.ProcessEnv): Record<string, string>;
export function benchSettings(opts: { privateKeyPem?: string; dataDir?: string; apiUrl?: string; env?: NodeJS.ProcessEnv }): Record<string, string | undefined>;
export function countingNoop(): { handler: HandlerModule<unknown>; processed(): number };
