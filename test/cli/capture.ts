// Runs `steward ARGS` in this process (main()), capturing what it writes to stdout and stderr.
import { vi } from "vitest";
import { main } from "../../src/cli/main.js";

export async function runCli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  vi.spyOn(process.stdout, "write").mockImplementation((chunk) => ((out += String(chunk)), true));
  vi.spyOn(process.stderr, "write").mockImplementation((chunk) => ((err += String(chunk)), true));
  try {
    return { code: await main(args), out, err };
  } finally {
    vi.restoreAllMocks();
  }
}
