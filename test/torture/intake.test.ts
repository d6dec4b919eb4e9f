// Hostile intake over real HTTP (bounded for CI; `npm run torture` sends 100,000+).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fuzzIntake, oversized, slowLoris, startIntake, type Intake } from "./intake-fuzz.js";

let intake: Intake;
beforeAll(async () => {
  intake = await startIntake({ maxBodyBytes: 1024 * 1024, headersTimeoutMs: 300, requestTimeoutMs: 600 });
});
afterAll(async () => {
  await intake?.close();
});

describe("hostile intake", () => {
  it("answers only documented codes to generated requests, records every accepted one, memory flat", async () => {
    const result = await fuzzIntake(intake, { runs: 5_000, seed: 20261121 });
    console.log(`intake fuzz: ${JSON.stringify({ ...result, undocumented: result.undocumented.length })}`);
    expect(result.undocumented).toEqual([]);
    expect(result.byStatus["500"]).toBeUndefined();
    // The generator reaches both sides: accepted deliveries and each kind of refusal.
    expect(result.accepted).toBeGreaterThan(200);
    for (const status of ["400", "401", "404", "405"]) expect(result.byStatus[status] ?? 0).toBeGreaterThan(0);
    expect(result.storedAccepted).toBe(result.accepted);
    expect(result.rssAfterMb - result.rssBeforeMb).toBeLessThan(200);
  }, 120_000);

  it("cuts off a client that sends its headers byte by byte", async () => {
    const loris = await slowLoris(intake.url, { gapMs: 50, maxBytes: 400 });
    expect(loris.cut).toBe(true);
    expect(loris.sent).toBeLessThan(400);
    expect(loris.answer === "" || /^HTTP\/1\.1 408/.test(loris.answer)).toBe(true);
  });

  it("cuts off a client that sends its body byte by byte", async () => {
    const loris = await slowLoris(intake.url, { gapMs: 50, maxBytes: 400, body: true });
    expect(loris.cut).toBe(true);
    expect(loris.sent).toBeLessThan(400);
  });

  it("refuses an oversized body with 413 without buffering it", async () => {
    const before = process.memoryUsage().rss;
    const big = await oversized(intake.url, 64 * 1024 * 1024, intake.secret);
    expect([413, 0]).toContain(big.status);
    expect(process.memoryUsage().rss - before).toBeLessThan(48 * 1024 * 1024);
    // Still serving.
    const after = await fuzzIntake(intake, { runs: 50, warmup: 0, seed: 5 });
    expect(after.undocumented).toEqual([]);
  });
});
