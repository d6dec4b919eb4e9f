// Where Steward's CPU goes at the intake: a short extra run of the Steward server with the V8
// profiler on for the load window only (not the measured run: profiling slows it), summarised by
// self time per function and per source area, for RESULTS.md's "what bounds it".
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { payloadsFor, startBenchApi, startSteward } from "./steward-child.js";
import { runLoad } from "./load.js";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface Hotspot {
  name: string;
  share: number;
}

export interface ProfileSummary {
  /** Share of the profiled window the main thread was running JavaScript or native code (not idle). */
  busyShare?: number;
  /** The load's concurrency while profiled (absent in results written before it was kept). */
  connections?: number;
  functions: Hotspot[];
  areas: Hotspot[];
}

/** Where a frame's code lives, coarse enough to read: Steward's own modules by file, dependencies by package. */
function areaOf(url: string, name: string): string {
  if (url === "") return name === "(garbage collector)" || name === "(idle)" || name === "(program)" ? name : "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith("node:")) return url;
  const src = url.search(/\/(src|handlers|test)\//);
  return src >= 0 ? url.slice(src + 1) : url;
}

export function summariseProfile(profile: CpuProfile, top = Number(process.env.BENCH_PROFILE_TOP ?? 12)): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Native frames (SQLite's run/get, writev, ...) are charged to the JavaScript function that called
  // them, skipping better-sqlite3's own wrappers so the Steward statement that ran is named.
  const callerOf = (id: number): ProfileNode | undefined => {
    for (let p = parent.get(id); p !== undefined; p = parent.get(p)) {
      const url = byId.get(p)!.callFrame.url;
      if (url !== "" && !url.includes("node_modules/better-sqlite3/")) return byId.get(p);
    }
    return undefined;
  };
  // The profiler's own stop-and-serialise call is not Steward's work.
  const isProfiler = (id: number): boolean => {
    for (let p: number | undefined = id; p !== undefined; p = parent.get(p)) if (byId.get(p)!.callFrame.url === "node:inspector") return true;
    return false;
  };
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  for (const id of [...self.keys()]) if (isProfiler(id)) self.delete(id);
  const idle = [...self].filter(([id]) => byId.get(id)?.callFrame.functionName === "(idle)").reduce((s, [, t]) => s + t, 0);
  const busy = [...self.values()].reduce((s, t) => s + t, 0) - idle;
  const fn = new Map<string, number>();
  const area = new Map<string, number>();
  for (const [id, t] of self) {
    const node = byId.get(id)!;
    const { functionName, url } = node.callFrame;
    if (functionName === "(idle)") continue;
    const special = url === "" && functionName.startsWith("(");
    const caller = url === "" && !special ? callerOf(id) : undefined;
    const a = caller ? areaOf(caller.callFrame.url, caller.callFrame.functionName) : areaOf(url, functionName);
    const key = caller ? `${functionName} (native) from ${caller.callFrame.functionName || "(anonymous)"} in ${a}` : `${functionName || "(anonymous)"} in ${a}`;
    fn.set(key, (fn.get(key) ?? 0) + t);
    area.set(a, (area.get(a) ?? 0) + t);
  }
  const rank = (m: Map<string, number>) =>
    [...m].sort((x, y) => y[1] - x[1]).slice(0, top).map(([name, t]) => ({ name, share: busy > 0 ? t / busy : 0 }));
  return { busyShare: busy + idle > 0 ? busy / (busy + idle) : 0, functions: rank(fn), areas: rank(area) };
}

export async function profileStewardIntake(o: { connections: number; seconds: number; durability: "process" | "power"; noop: boolean }): Promise<ProfileSummary> {
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-prof-"));
  const file = join(dir, "steward-intake.cpuprofile");
  const api = await startBenchApi(o.noop);
  try {
    const child = await startSteward({ WEBHOOK_SECRET: "bench-secret", STEWARD_DURABILITY: o.durability }, api);
    const payloads = payloadsFor("bench-secret", api);
    try {
      // Warm up first so start-up, module loading and JIT warm-up stay out of the profile.
      await runLoad({ url: child.url, payloads, connections: 10, seconds: 1 });
      await child.ask("drain");
      await child.ask({ profile: "start" });
      await runLoad({ url: child.url, payloads, connections: o.connections, seconds: o.seconds });
      await child.ask("drain");
      await child.ask({ profile: "stop", file });
    } finally {
      await child.stop();
    }
    if (process.env.BENCH_PROFILE_KEEP) await writeFile(process.env.BENCH_PROFILE_KEEP, await readFile(file));
    return { ...summariseProfile(JSON.parse(await readFile(file, "utf8")) as CpuProfile), connections: o.connections };
  } finally {
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
