// Handler-facing check-run reporter. Handlers describe what to show; the reporter
// knows the API's rules (50 annotations a request, output size limits, 1000 runs a
// name in a suite, details_url, actions).

export type AnnotationLevel = "notice" | "warning" | "failure";

export interface Annotation {
  path: string;
  start_line: number;
  end_line: number;
  start_column?: number;
  end_column?: number;
  annotation_level: AnnotationLevel;
  message: string;
  title?: string;
  raw_details?: string;
}

export interface CheckAction {
  label: string;
  description: string;
  identifier: string;
}

export type CheckConclusion =
  "success" | "failure" | "neutral" | "cancelled" | "skipped" | "timed_out" | "action_required";

export interface CheckReport {
  owner: string;
  repo: string;
  headSha: string;
  /** Check-run name, e.g. `steward/config`. */
  name: string;
  status?: "queued" | "in_progress" | "completed";
  conclusion?: CheckConclusion;
  title: string;
  /** Markdown. Cut with a visible note when over the API's limit. */
  summary: string;
  text?: string;
  annotations?: Annotation[];
  actions?: CheckAction[];
  /** Correlates the run with Steward's own records (delivery id, plan id). */
  externalId?: string;
  /** Where the whole report can be read when summary or text had to be cut (defaults to the details URL). */
  fullReportUrl?: string;
}

export interface CheckRunRef {
  id: number;
  html_url: string | null;
}

export interface CheckReporter {
  /** Create or update (reuse by name and head sha) a check run and send all annotations. */
  report(report: CheckReport): Promise<CheckRunRef>;
}
