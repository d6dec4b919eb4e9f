// The service's V8 heap settings (bin/heap-flags.js) reach every way it starts: the semi-space
// size is fixed when V8 sets up its heap, so `npm start` must pass it on node's command line.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { HEAP_FLAGS } from "../../bin/heap-flags.js";

const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { scripts: Record<string, string> };

describe("heap flags", () => {
  it("npm start passes the semi-space size that only node's command line can set", () => {
    const semi = HEAP_FLAGS.find((f) => f.startsWith("--max-semi-space-size="));
    expect(semi).toBeDefined();
    expect(pkg.scripts.start!.split(/\s+/)).toContain(semi);
    expect(pkg.scripts.start).toMatch(/bin\/steward\.js start$/);
  });

  it("the bin applies the settings before it loads the service", () => {
    const bin = readFileSync(new URL("../../bin/steward.js", import.meta.url), "utf8");
    const applied = bin.indexOf("applyHeapFlags();");
    expect(applied).toBeGreaterThan(0);
    expect(applied).toBeLessThan(bin.indexOf("await import("));
  });
});
