// The one place check runs are written. Handlers describe a report; this module finds the
// run to reuse (same name, same head SHA: the API keeps at most 1000 runs of a name in a
// suite), fits the output to the API's limits, and sends annotations 50 a request.
import type { InstallationOctokit } from "../handler.js";
import { annotationBatches, fitActions, fitAnnotation, fitMarkdown, fitTitle, planAnnotations } from "./limits.js";
import type { Annotation, CheckReport, CheckReporter, CheckRunRef } from "./types.js";

export interface CheckReporterOptions {
  /** Steward's status page: every run links to it. */
  detailsUrl?: string;
  /** This app's id: only its own runs are reused (another app's run of the same name is not ours to update). */
  appId?: number;
}

/** Tries of a check run create whose answer was lost or was a 5xx (the client's retries are off for it). */
const CREATE_ATTEMPTS = 4;
const CREATE_BACKOFF_MS = 100;

interface ExistingRun {
  id: number;
  html_url: string | null;
  output?: { annotations_count?: number };
  app?: { id?: number } | null;
}

// Two deliveries about one commit (pull_request.opened and check_suite.requested arrive
// together) would both find no run and both create one: reports of one run take turns.
const turns = new Map<string, Promise<unknown>>();

async function inTurn<T>(key: string, work: () => Promise<T>): Promise<T> {
  const previous = turns.get(key) ?? Promise.resolve();
  const mine = previous.catch(() => undefined).then(work);
  turns.set(key, mine);
  try {
    return await mine;
  } finally {
    if (turns.get(key) === mine) turns.delete(key);
  }
}

/**
 * Runs this process made or updated, with the annotations they carry: the next report of the same
 * run (a re-run's final answer after its "in progress", the next delivery for one commit) needs no
 * lookup. Per installation client, as the client is kept per installation. A run is forgotten
 * after a while and when a write to it fails, and one with many annotations is not remembered
 * (looking it up costs less than holding them); another replica's later run of the same name is
 * not seen, so the memory is short.
 */
interface KnownRun {
  id: number;
  html_url: string | null;
  annotations: Partial<Annotation>[];
  at: number;
}
const knownBy = new WeakMap<InstallationOctokit, Map<string, KnownRun>>();
const KNOWN_RUNS = 2000;
const KNOWN_FOR_MS = 10 * 60_000;
const KNOWN_ANNOTATIONS = 50;

export function createCheckReporter(octokit: InstallationOctokit, opts: CheckReporterOptions = {}): CheckReporter {
  let known = knownBy.get(octokit);
  if (!known) knownBy.set(octokit, (known = new Map()));
  const runs = known;
  const recall = (key: string): KnownRun | undefined => {
    const run = runs.get(key);
    if (run && Date.now() - run.at < KNOWN_FOR_MS) return run;
    runs.delete(key);
    return undefined;
  };
  const remember = (key: string, run: Omit<KnownRun, "at">): void => {
    runs.delete(key);
    if (run.annotations.length > KNOWN_ANNOTATIONS) return;
    runs.set(key, { ...run, at: Date.now() });
    if (runs.size > KNOWN_RUNS) runs.delete(runs.keys().next().value!);
  };

  async function findExisting(report: CheckReport): Promise<ExistingRun | undefined> {
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
      owner: report.owner,
      repo: report.repo,
      ref: report.headSha,
      check_name: report.name,
      filter: "latest",
      per_page: 100,
      ...(opts.appId ? { app_id: opts.appId } : {}),
    });
    const runs = (data.check_runs as ExistingRun[]).filter((r) => !opts.appId || !r.app?.id || r.app.id === opts.appId);
    return runs.sort((a, b) => b.id - a.id)[0];
  }

  async function existingAnnotations(report: CheckReport, run: ExistingRun): Promise<Partial<Annotation>[]> {
    if (!run.output?.annotations_count) return [];
    return (await octokit.paginate("GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations", {
      owner: report.owner,
      repo: report.repo,
      check_run_id: run.id,
      per_page: 100,
    })) as Partial<Annotation>[];
  }

  return {
    async report(report) {
      // Fit everything first: a malformed action throws here, before any request is made.
      const actions = fitActions(report.actions);
      const key = [report.owner.toLowerCase(), report.repo.toLowerCase(), report.headSha, report.name].join("\0");
      return inTurn(key, async () => {
        try {
          return await send(report, actions, key);
        } catch (e) {
          runs.delete(key);
          throw e;
        }
      });
    },
  };

  async function send(report: CheckReport, actions: ReturnType<typeof fitActions>, key: string): Promise<CheckRunRef> {
    const pointer = report.fullReportUrl ?? opts.detailsUrl;
    const title = fitTitle(report.title);
    const summary = fitMarkdown(report.summary, pointer);
    const text = report.text === undefined ? undefined : fitMarkdown(report.text, pointer);
    const wanted = (report.annotations ?? []).map(fitAnnotation);

    const mine = recall(key);
    const existing: ExistingRun | undefined = mine
      ? { id: mine.id, html_url: mine.html_url, output: { annotations_count: mine.annotations.length } }
      : await findExisting(report);
    const carried = mine ? mine.annotations : existing ? await existingAnnotations(report, existing) : [];
    let plan = { reuse: false, send: wanted };
    if (existing) plan = planAnnotations(carried, wanted);
    const batches = annotationBatches(plan.send);

    const completed = report.conclusion !== undefined;
    const finalStatus = completed
      ? { status: "completed" as const, conclusion: report.conclusion, completed_at: new Date().toISOString() }
      : { status: report.status ?? "in_progress" };
    const common = {
      ...(opts.detailsUrl ? { details_url: opts.detailsUrl } : {}),
      ...(report.externalId ? { external_id: report.externalId } : {}),
      ...(actions ? { actions } : {}),
    };
    const output = (annotations: Annotation[]) => ({
      title,
      summary,
      ...(text !== undefined ? { text } : {}),
      annotations,
    });
    // The conclusion goes with the last batch, so a run never shows "completed" with half its annotations.
    const statusFor = (i: number) => (i === batches.length - 1 ? finalStatus : { status: "in_progress" as const });

    let ref: CheckRunRef;
    if (existing && plan.reuse) {
      ref = { id: existing.id, html_url: existing.html_url };
    } else {
      ref = await createOnce(report, existing, {
        owner: report.owner,
        repo: report.repo,
        name: report.name,
        head_sha: report.headSha,
        ...common,
        ...statusFor(0),
        output: output(batches[0]!),
      });
      // A run found after a lost answer was made by that create: it has the first batch.
    }
    const first = existing && plan.reuse ? 0 : 1;
    for (let i = first; i < batches.length; i++) {
      await octokit.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", {
        owner: report.owner,
        repo: report.repo,
        check_run_id: ref.id,
        ...(i === 0 ? common : {}),
        ...statusFor(i),
        output: output(batches[i]!),
      } as any);
    }
    const reused = existing !== undefined && plan.reuse;
    remember(key, { ...ref, annotations: reused ? [...carried, ...plan.send] : plan.send });
    return ref;
  }

  /**
   * Create a check run at most once. The client's own retries are off for this write: a create
   * whose answer was lost (a dropped connection, a 5xx after the fact) may have made the run, so
   * before trying again look for a run of this name newer than the one seen before.
   */
  async function createOnce(
    report: CheckReport,
    seen: ExistingRun | undefined,
    body: Record<string, unknown>,
  ): Promise<CheckRunRef> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { data } = await octokit.request("POST /repos/{owner}/{repo}/check-runs", {
          ...body,
          request: { retries: 0 },
        } as any);
        return { id: Number(data.id), html_url: data.html_url ?? null };
      } catch (error) {
        const status = (error as { status?: unknown }).status;
        const ambiguous = typeof status !== "number" || status >= 500;
        if (!ambiguous || attempt >= CREATE_ATTEMPTS) throw error;
        await new Promise((r) => setTimeout(r, CREATE_BACKOFF_MS * attempt));
        const now = await findExisting(report);
        if (now && now.id !== seen?.id) return { id: now.id, html_url: now.html_url };
      }
    }
  }
}
