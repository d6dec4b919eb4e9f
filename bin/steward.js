#!/usr/bin/env node
// Steward runs its TypeScript sources through tsx's loader: no build step, and what
// runs is exactly what the tests ran. See README "Why each dependency".
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
