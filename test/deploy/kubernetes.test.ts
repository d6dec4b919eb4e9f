// The Kubernetes manifests (deploy/kubernetes): every overlay rendered with `kubectl kustomize`,
// every document checked against its Kubernetes (or Prometheus Operator) schema, the promises
// of each topology checked on the rendered objects, and the refusals shown to refuse: a SQLite
// Steward with two replicas, a rolling update or an autoscaler is caught by the checks below,
// and the API server's admission policy (CEL, evaluated here) denies the same objects.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isDeepStrictEqual } from "node:util";
import { parse, parseAllDocuments } from "yaml";
import { evaluate } from "@marcbachmann/cel-js";
import { loadConfig } from "../../src/config/env.js";
import { appKey } from "../support/app-key.js";

const ROOT = resolve(import.meta.dirname, "../../deploy/kubernetes");
const OVERLAYS = ["sqlite", "redis"] as const;

const kubectl = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8" });
const hasKubectl = kubectl.status === 0;
if (!hasKubectl) {
  process.stderr.write(
    "test/deploy/kubernetes.test.ts: kubectl not found; the manifest tests are skipped (apt-get install kubernetes-client)\n",
  );
}

type Obj = Record<string, any>;

const temps: string[] = [];
afterAll(() => temps.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function render(dir: string): Obj[] {
  const out = spawnSync("kubectl", ["kustomize", dir], { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
  if (out.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${out.stderr}`);
  return parseAllDocuments(out.stdout)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${dir}: ${doc.errors[0]!.message}`);
      return doc.toJS() as Obj;
    })
    .filter((o) => o !== null);
}

/** A kustomization of its own (as an operator would write on top of ours), rendered. */
function renderOwn(kustomization: Obj | string, files: Record<string, string> = {}): Obj[] {
  const dir = mkdtempSync(join(tmpdir(), "steward-kustomize-"));
  temps.push(dir);
  const rel = (p: string) => relative(dir, join(ROOT, p));
  const text =
    typeof kustomization === "string"
      ? kustomization
      : JSON.stringify({ apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization", ...kustomization });
  writeFileSync(
    join(dir, "kustomization.yaml"),
    text.replace(/@ROOT@\/([^"\s]+)/g, (_m, p: string) => rel(p)),
  );
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return render(dir);
}

/** The model class for a document's apiVersion and kind: every document must have one. */
async function modelOf(doc: Obj): Promise<new (data: Obj) => { validate(): void }> {
  const apiVersion = String(doc.apiVersion);
  const spec = apiVersion.startsWith("monitoring.coreos.com/")
    ? `@kubernetes-models/prometheus-operator/${apiVersion}`
    : `kubernetes-models/${apiVersion}`;
  const mod = (await import(spec)) as Record<string, unknown>;
  const model = mod[String(doc.kind)];
  if (typeof model !== "function") throw new Error(`no schema for ${apiVersion} ${doc.kind}`);
  return model as new (data: Obj) => { validate(): void };
}

const SECRET_SETTINGS = [
  "APP_ID",
  "PRIVATE_KEY",
  "WEBHOOK_SECRET",
  "GITHUB_CLIENT_SECRET",
  "STEWARD_SESSION_SECRET",
  "STEWARD_REVIEWER_TOKEN",
  "STEWARD_REDIS_URL",
  "WEBHOOK_PROXY_URL",
];
/** Steward's own exit bound past STEWARD_SHUTDOWN_TIMEOUT (src/cli/commands/start.ts EXIT_MARGIN_MS). */
const EXIT_MARGIN_S = 5;

const byKind = (docs: Obj[], kind: string) => docs.filter((d) => d.kind === kind);
const named = (docs: Obj[], kind: string, name: string) =>
  docs.find((d) => d.kind === kind && d.metadata?.name === name);
const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) =>
  selector !== undefined &&
  Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

/**
 * What the rendered manifests of a Steward topology must hold; each problem as one line. The
 * tests run it on every overlay (none) and on altered renders (the problem named).
 */
function problems(docs: Obj[]): string[] {
  const out: string[] = [];
  const workloads = docs.filter((d) =>
    ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Pod"].includes(d.kind),
  );
  if (workloads.length !== 1 || workloads[0]!.kind !== "Deployment")
    return [`expected one Deployment, got ${workloads.map((w) => w.kind).join(", ") || "none"}`];
  const deployment = workloads[0]!;
  const pod = deployment.spec.template.spec as Obj;
  const container = (pod.containers as Obj[]).find((c) => c.name === "steward");
  if (!container) return ["no container named steward"];
  const store = deployment.metadata.labels?.["steward.dev/store"] as string | undefined;
  if (store !== "sqlite" && store !== "redis")
    out.push(`Deployment has no steward.dev/store label of a known topology (got ${store})`);

  // Settings: Steward's own loader reads them (with test credentials), so defaults and syntax are Steward's.
  const configMaps = (container.envFrom ?? [])
    .filter((e: Obj) => e.configMapRef)
    .map((e: Obj) => named(docs, "ConfigMap", e.configMapRef.name));
  if (configMaps.some((c: Obj | undefined) => !c)) out.push("envFrom names a ConfigMap that is not rendered");
  const settings: Record<string, string> = Object.assign({}, ...configMaps.map((c: Obj | undefined) => c?.data ?? {}));
  for (const e of container.env ?? []) if (typeof e.value === "string") settings[e.name] = e.value;
  const config = loadConfig({
    ...settings,
    APP_ID: "1",
    WEBHOOK_SECRET: "test-webhook-secret-kubernetes",
    PRIVATE_KEY: appKey().privateKey,
  });

  // Secrets come from an existing Secret, never from the manifests.
  if (byKind(docs, "Secret").length > 0)
    out.push("a Secret is rendered (credentials must come from an existing Secret)");
  for (const name of SECRET_SETTINGS) {
    if (name in settings) out.push(`${name} is set in the manifests (it belongs in the Secret)`);
  }
  if (!(container.envFrom ?? []).some((e: Obj) => e.secretRef?.name))
    out.push("no envFrom secretRef: APP_ID, PRIVATE_KEY and WEBHOOK_SECRET have no source");

  // Hardening.
  const psc = pod.securityContext ?? {};
  const csc = container.securityContext ?? {};
  if (psc.runAsNonRoot !== true && csc.runAsNonRoot !== true) out.push("runAsNonRoot is not true");
  if (psc.runAsUser === 0 || csc.runAsUser === 0) out.push("runs as uid 0");
  if (csc.readOnlyRootFilesystem !== true) out.push("readOnlyRootFilesystem is not true");
  if (csc.allowPrivilegeEscalation !== false) out.push("allowPrivilegeEscalation is not false");
  if (csc.privileged === true) out.push("privileged");
  if (!(csc.capabilities?.drop ?? []).includes("ALL")) out.push("capabilities do not drop ALL");
  if ((csc.capabilities?.add ?? []).length > 0) out.push("capabilities are added");
  if ((csc.seccompProfile ?? psc.seccompProfile)?.type !== "RuntimeDefault")
    out.push("seccompProfile is not RuntimeDefault");
  if (pod.automountServiceAccountToken !== false)
    out.push("the service account token is mounted (Steward never calls the Kubernetes API)");
  if (pod.hostNetwork || pod.hostPID || pod.hostIPC) out.push("shares a host namespace");

  // Volumes: every mount defined; the data directory mounted where STEWARD_DATA_DIR points; /tmp writable.
  const volumes = new Map<string, Obj>((pod.volumes ?? []).map((v: Obj) => [v.name, v]));
  for (const m of container.volumeMounts ?? []) {
    if (!volumes.has(m.name))
      out.push(`volume ${m.name} is mounted at ${m.mountPath} and not defined (the API server refuses it)`);
  }
  const dataMount = (container.volumeMounts ?? []).find((m: Obj) => m.mountPath === config.dataDir);
  if (!dataMount)
    out.push(
      `STEWARD_DATA_DIR (${config.dataDir}) is not a mounted volume: the read-only root filesystem would refuse the store`,
    );
  if (!(container.volumeMounts ?? []).some((m: Obj) => m.mountPath === "/tmp" && volumes.get(m.name)?.emptyDir))
    out.push("/tmp is not a writable emptyDir");

  // Probes and shutdown.
  const port = (container.ports ?? []).find((p: Obj) => p.containerPort === config.port);
  if (!port) out.push(`no container port ${config.port} (PORT)`);
  const probe = (p: Obj | undefined, path: string, what: string) => {
    if (!p?.httpGet) return out.push(`no ${what} probe`);
    if (p.httpGet.path !== path) out.push(`${what} probe asks ${p.httpGet.path}, not ${path}`);
    if (p.httpGet.port !== config.port && p.httpGet.port !== port?.name)
      out.push(`${what} probe asks port ${p.httpGet.port}, not Steward's`);
  };
  probe(container.livenessProbe, "/healthz", "liveness");
  probe(container.readinessProbe, "/readyz", "readiness");
  probe(container.startupProbe, "/healthz", "startup");
  const startupS = (container.startupProbe?.periodSeconds ?? 10) * (container.startupProbe?.failureThreshold ?? 3);
  if (startupS < 300) out.push(`startup probe gives start-up (schema upgrade) only ${startupS} s`);
  const preStop = container.lifecycle?.preStop as Obj | undefined;
  const sleepS =
    preStop?.sleep?.seconds ?? (preStop?.exec?.command?.[0] === "sleep" ? Number(preStop.exec.command[1]) : undefined);
  if (sleepS === undefined || !(sleepS > 0 && sleepS <= 15)) out.push("no short preStop sleep");
  const grace = pod.terminationGracePeriodSeconds ?? 30;
  const needed = (sleepS ?? 0) + config.shutdownTimeoutMs / 1000 + EXIT_MARGIN_S;
  if (!(grace > needed))
    out.push(
      `terminationGracePeriodSeconds ${grace} is not above preStop ${sleepS ?? 0} s + STEWARD_SHUTDOWN_TIMEOUT ${config.shutdownTimeoutMs / 1000} s + ${EXIT_MARGIN_S} s`,
    );

  // Exposure: the public Ingress routes the webhook path alone; /metrics only inside the cluster.
  const podLabels = deployment.spec.template.metadata.labels as Record<string, string>;
  const services = byKind(docs, "Service").filter((s) => matches(s.spec.selector, podLabels));
  const webhookService = named(docs, "Service", "steward-webhook");
  const metricsService = named(docs, "Service", "steward-metrics");
  const consoleService = named(docs, "Service", "steward-console");
  if (!webhookService || !metricsService || !consoleService)
    out.push("expected Services steward-webhook, steward-console and steward-metrics");
  for (const s of services)
    if (s.spec.type && s.spec.type !== "ClusterIP")
      out.push(`Service ${s.metadata.name} is ${s.spec.type}: reachable from outside without the Ingress's routing`);
  const paths = byKind(docs, "Ingress").flatMap((ing) =>
    (ing.spec.rules ?? []).flatMap((r: Obj) =>
      (r.http?.paths ?? []).map((p: Obj) => ({
        ingress: ing.metadata.name as string,
        host: r.host as string,
        path: p.path as string,
        pathType: p.pathType as string,
        service: p.backend?.service?.name as string,
      })),
    ),
  );
  const webhookPaths = paths.filter((p) => p.service === "steward-webhook");
  if (webhookPaths.length === 0) out.push("no Ingress routes the webhook");
  for (const p of webhookPaths) {
    if (p.path !== config.webhookPath || p.pathType !== "Exact")
      out.push(`the webhook Ingress routes ${p.pathType} ${p.path}, not exactly WEBHOOK_PATH ${config.webhookPath}`);
    for (const q of paths.filter((q) => q.ingress === p.ingress && q.service !== "steward-webhook"))
      out.push(`Ingress ${p.ingress} also routes ${q.path} to ${q.service}`);
  }
  for (const p of paths) if (p.service === "steward-metrics") out.push(`Ingress ${p.ingress} exposes /metrics`);
  for (const p of paths.filter((p) => p.service === "steward-console")) {
    if (!p.path.startsWith("/console")) out.push(`the console Ingress routes ${p.path}, not /console`);
    if (config.statusUrl && new URL(config.statusUrl).host !== p.host)
      out.push(
        `the console Ingress host ${p.host} is not STEWARD_STATUS_URL's (${config.statusUrl}): the OAuth callback would miss it`,
      );
    if (webhookPaths.some((w) => w.host === p.host)) out.push("the console shares the public webhook host");
  }
  if (!(config.statusUrl && paths.some((p) => p.service === "steward-console")))
    out.push("no console Ingress on STEWARD_STATUS_URL's host");
  // The alert rules a cluster loads are the ones promtool checks (deploy/prometheus).
  const rules = byKind(docs, "PrometheusRule");
  const checked = (parse(readFileSync(resolve(ROOT, "../prometheus/steward-rules.yml"), "utf8")) as Obj).groups;
  if (rules.length !== 1) out.push("expected one PrometheusRule");
  else if (!isDeepStrictEqual(rules[0]!.spec.groups, checked))
    out.push("the PrometheusRule's groups are not deploy/prometheus/steward-rules.yml's");
  const monitors = byKind(docs, "ServiceMonitor");
  if (monitors.length !== 1) out.push("expected one ServiceMonitor");
  for (const m of monitors) {
    if (!metricsService || !matches(m.spec.selector?.matchLabels, metricsService.metadata.labels))
      out.push("the ServiceMonitor does not select steward-metrics");
    for (const ep of m.spec.endpoints ?? []) {
      if (ep.path !== "/metrics" || !(metricsService?.spec.ports ?? []).some((p: Obj) => p.name === ep.port))
        out.push(`ServiceMonitor endpoint ${ep.port}${ep.path} is not steward-metrics' /metrics`);
    }
    for (const s of services) {
      if (s !== metricsService && matches(m.spec.selector?.matchLabels, s.metadata.labels))
        out.push(`the ServiceMonitor also selects ${s.metadata.name}`);
    }
  }

  // The topology's own promises.
  const hpas = byKind(docs, "HorizontalPodAutoscaler").filter(
    (h) => h.spec.scaleTargetRef?.name === deployment.metadata.name,
  );
  const claims = [...volumes.values()]
    .filter((v) => v.persistentVolumeClaim)
    .map((v) => named(docs, "PersistentVolumeClaim", v.persistentVolumeClaim.claimName));
  if (store === "sqlite") {
    if (deployment.spec.replicas !== 1) out.push(`SQLite: replicas is ${deployment.spec.replicas}, not 1`);
    if (deployment.spec.strategy?.type !== "Recreate")
      out.push(`SQLite: strategy is ${deployment.spec.strategy?.type ?? "RollingUpdate (default)"}, not Recreate`);
    // Any autoscaler: one rendered on top of this overlay may still name the Deployment by its component name.
    if (byKind(docs, "HorizontalPodAutoscaler").length > 0) out.push("SQLite: an autoscaler is rendered");
    if (!volumes.get(dataMount?.name)?.persistentVolumeClaim)
      out.push("SQLite: the data directory is not a PersistentVolumeClaim");
    for (const c of claims) {
      const modes = (c?.spec.accessModes ?? []) as string[];
      if (!c || modes.length !== 1 || !["ReadWriteOnce", "ReadWriteOncePod"].includes(modes[0]!))
        out.push(`SQLite: claim access modes ${JSON.stringify(modes)}, not ReadWriteOnce`);
    }
    if (!String(deployment.metadata.name).endsWith("steward-sqlite"))
      out.push(
        "SQLite: the Deployment is not named *steward-sqlite (the admission policy knows a scale request by it)",
      );
    const policy = byKind(docs, "ValidatingAdmissionPolicy").find(
      (p) => p.metadata.name === "steward-sqlite-single-replica",
    );
    const binding = byKind(docs, "ValidatingAdmissionPolicyBinding").find(
      (b) => b.spec.policyName === "steward-sqlite-single-replica",
    );
    if (!policy || !binding || !(binding.spec.validationActions ?? []).includes("Deny"))
      out.push("SQLite: the single-replica admission policy is not rendered and bound to Deny");
    for (const p of [policy, binding])
      if (p?.metadata.namespace)
        out.push(`SQLite: ${p.kind} is cluster-scoped but has namespace ${p.metadata.namespace}`);
  }
  if (store === "redis") {
    const minReplicas =
      hpas.length > 0 ? Math.min(...hpas.map((h) => h.spec.minReplicas ?? 1)) : (deployment.spec.replicas ?? 1);
    if (minReplicas < 2) out.push(`shared store: ${minReplicas} replica(s), no redundancy`);
    const redisUrl = (container.env ?? []).find((e: Obj) => e.name === "STEWARD_REDIS_URL");
    if (!redisUrl?.valueFrom?.secretKeyRef || redisUrl.valueFrom.secretKeyRef.optional === true)
      out.push("shared store: STEWARD_REDIS_URL is not required from the Secret (pods would start on per-pod SQLite)");
    if (deployment.spec.strategy?.type === "Recreate")
      out.push("shared store: strategy Recreate takes every replica down at once");
    const pdbs = byKind(docs, "PodDisruptionBudget").filter((p) => matches(p.spec.selector?.matchLabels, podLabels));
    if (pdbs.length !== 1 || !(pdbs[0]!.spec.minAvailable >= 1 || pdbs[0]!.spec.maxUnavailable !== undefined))
      out.push("shared store: no PodDisruptionBudget keeping a replica");
    const anti = pod.affinity?.podAntiAffinity as Obj | undefined;
    const terms = [
      ...(anti?.requiredDuringSchedulingIgnoredDuringExecution ?? []),
      ...(anti?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((t: Obj) => t.podAffinityTerm),
    ];
    if (
      !terms.some(
        (t: Obj) => t.topologyKey === "kubernetes.io/hostname" && matches(t.labelSelector?.matchLabels, podLabels),
      )
    )
      out.push("shared store: no pod anti-affinity across nodes");
    if (claims.some((c) => c && !(c.spec.accessModes ?? []).includes("ReadWriteMany")))
      out.push("shared store: replicas share a ReadWriteOnce claim");
  }
  return out;
}

const withDeployment = (docs: Obj[], change: (d: Obj) => void): Obj[] => {
  const copy = structuredClone(docs);
  change(copy.find((d) => d.kind === "Deployment")!);
  return copy;
};

describe.skipIf(!hasKubectl)("Kubernetes manifests (kubectl kustomize)", () => {
  // Rendered while the tests are collected, which vitest does for a skipped suite too.
  const rendered = Object.fromEntries(
    OVERLAYS.map((o) => [o, hasKubectl ? render(join(ROOT, "overlays", o)) : []]),
  ) as Record<(typeof OVERLAYS)[number], Obj[]>;

  it.each(OVERLAYS)("overlays/%s: every document validates against its schema", async (overlay) => {
    const docs = rendered[overlay];
    expect(docs.length).toBeGreaterThan(8);
    for (const doc of docs) {
      const Model = await modelOf(doc);
      expect(() => new Model(doc).validate(), `${doc.kind} ${doc.metadata?.name}`).not.toThrow();
    }
  });

  it.each(OVERLAYS)("overlays/%s: holds every promise of its topology", (overlay) => {
    expect(problems(rendered[overlay])).toEqual([]);
  });

  it("the schema check refuses a malformed document (it is not vacuous)", async () => {
    const bad = structuredClone(rendered.sqlite.find((d) => d.kind === "Deployment")!);
    bad.spec.template.spec.containers[0].securityContext.runAsNonRoot = "yes";
    const Model = await modelOf(bad);
    expect(() => new Model(bad).validate()).toThrow(/runAsNonRoot must be boolean/);
    const monitor = structuredClone(rendered.redis.find((d) => d.kind === "ServiceMonitor")!);
    monitor.spec.endpoints[0].port = 3000;
    const Monitor = await modelOf(monitor);
    expect(() => new Monitor(monitor).validate()).toThrow(/port must be string/);
  });

  it("the checks name each broken promise", () => {
    const sqlite = rendered.sqlite;
    const cases: [Obj[], RegExp][] = [
      [
        withDeployment(sqlite, (d) => (d.spec.template.spec.terminationGracePeriodSeconds = 30)),
        /terminationGracePeriodSeconds 30 is not above/,
      ],
      [
        withDeployment(
          sqlite,
          (d) => (d.spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem = false),
        ),
        /readOnlyRootFilesystem/,
      ],
      [
        withDeployment(sqlite, (d) => (d.spec.template.spec.containers[0].securityContext.capabilities.drop = [])),
        /drop ALL/,
      ],
      [withDeployment(sqlite, (d) => delete d.spec.template.spec.containers[0].startupProbe), /no startup probe/],
      [
        withDeployment(sqlite, (d) => (d.spec.template.spec.containers[0].readinessProbe.httpGet.path = "/healthz")),
        /readiness probe asks \/healthz/,
      ],
      [
        withDeployment(
          sqlite,
          (d) => (d.spec.template.spec.containers[0].env = [{ name: "WEBHOOK_SECRET", value: "inline" }]),
        ),
        /WEBHOOK_SECRET is set in the manifests/,
      ],
      [
        [
          ...sqlite,
          { apiVersion: "v1", kind: "Secret", metadata: { name: "steward-credentials" }, stringData: { APP_ID: "1" } },
        ],
        /a Secret is rendered/,
      ],
      [
        sqlite.map((d) =>
          d.kind === "Ingress" && d.metadata.name === "steward-webhook"
            ? {
                ...d,
                spec: {
                  ...d.spec,
                  rules: [
                    {
                      ...d.spec.rules[0],
                      http: { paths: [{ ...d.spec.rules[0].http.paths[0], path: "/", pathType: "Prefix" }] },
                    },
                  ],
                },
              }
            : d,
        ),
        /routes Prefix \/, not exactly WEBHOOK_PATH/,
      ],
      [
        sqlite.map((d) =>
          d.kind === "Ingress" && d.metadata.name === "steward-console"
            ? {
                ...d,
                spec: {
                  ...d.spec,
                  rules: [
                    {
                      ...d.spec.rules[0],
                      http: {
                        paths: [
                          {
                            path: "/metrics",
                            pathType: "Exact",
                            backend: { service: { name: "steward-metrics", port: { name: "metrics" } } },
                          },
                        ],
                      },
                    },
                  ],
                },
              }
            : d,
        ),
        /exposes \/metrics/,
      ],
      [withDeployment(rendered.redis, (d) => delete d.spec.template.spec.affinity), /no pod anti-affinity/],
      [rendered.redis.filter((d) => d.kind !== "PodDisruptionBudget"), /no PodDisruptionBudget/],
      [
        withDeployment(
          rendered.redis,
          (d) => (d.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.optional = true),
        ),
        /STEWARD_REDIS_URL is not required/,
      ],
    ];
    for (const [docs, problem] of cases)
      expect(problems(docs)).toEqual(expect.arrayContaining([expect.stringMatching(problem)]));
  });

  it("the common component alone is not a deployable Steward", () => {
    const docs = render(join(ROOT, "components/steward"));
    expect(problems(docs)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/volume data is mounted at \/var\/lib\/steward and not defined/),
        expect.stringMatching(/no steward.dev\/store label/),
      ]),
    );
  });

  it.each(OVERLAYS)(
    "the guide's own overlay (docs/deploy/kubernetes.md) on overlays/%s renders and holds",
    async (overlay) => {
      const guide = readFileSync(resolve(ROOT, "../../docs/deploy/kubernetes.md"), "utf8");
      const block = /```yaml\n(# my-steward\/kustomization\.yaml\n[\s\S]*?)```/.exec(guide)![1]!;
      const docs = renderOwn(
        block.replaceAll("../steward/deploy/kubernetes/", "@ROOT@/").replace("overlays/sqlite", `overlays/${overlay}`),
      );
      for (const doc of docs) new (await modelOf(doc))(doc).validate();
      expect(problems(docs)).toEqual([]);
      expect(docs.find((d) => d.kind === "Deployment")!.spec.template.spec.containers[0].image).toBe(
        "ghcr.io/YOUR_ORG/steward:0.1.0",
      );
      expect(docs.find((d) => d.kind === "Ingress" && d.metadata.name === "steward-webhook")!.spec.rules[0].host).toBe(
        "hooks.steward.example.com",
      );
    },
  );

  // The image and the manifests are written apart: the pods' uid and data directory must be the image's.
  const dockerfile = resolve(ROOT, "../../Dockerfile");
  it.skipIf(!existsSync(dockerfile))("runs as the image's user with the image's data directory (Dockerfile)", () => {
    const text = readFileSync(dockerfile, "utf8");
    // The last USER: a number, a user created with --uid, or the official Node image's `node` (1000).
    const user = [...text.matchAll(/^\s*USER\s+([^\s:]+)/gm)].at(-1)?.[1];
    expect(user, "the Dockerfile's runtime stage sets a USER").toBeDefined();
    const created = new RegExp(`(?:useradd|adduser)[^\\n]*?(?:--uid|-u)[ =](\\d+)[^\\n]*\\b${user}\\b`).exec(text)?.[1];
    const uid = /^\d+$/.test(user!) ? user : (created ?? (user === "node" ? "1000" : undefined));
    expect(uid, `the uid of the Dockerfile's USER ${user}`).toBeDefined();
    const dataDir = /STEWARD_DATA_DIR[= ]("?)([^\s"]+)\1/.exec(text)?.[2];
    for (const overlay of OVERLAYS) {
      const deployment = rendered[overlay].find((d) => d.kind === "Deployment")!;
      const config = rendered[overlay].find((d) => d.kind === "ConfigMap")!;
      expect(
        deployment.spec.template.spec.securityContext.runAsUser,
        "runAsUser in deploy/kubernetes/components/steward/deployment.yaml",
      ).toBe(Number(uid));
      if (dataDir !== undefined) expect(config.data.STEWARD_DATA_DIR).toBe(dataDir);
    }
  });

  it("queue autoscaling renders on the shared store, scaling on steward_queue_depth", async () => {
    const docs = renderOwn({
      resources: ["@ROOT@/overlays/redis"],
      components: ["@ROOT@/components/queue-autoscaling"],
    });
    for (const doc of docs) new (await modelOf(doc))(doc).validate();
    expect(problems(docs)).toEqual([]);
    const hpa = docs.find((d) => d.kind === "HorizontalPodAutoscaler")!;
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: "Deployment", name: "steward" });
    expect(hpa.spec.metrics[0].external.metric.name).toBe("steward_queue_depth");
    expect(docs.find((d) => d.kind === "Deployment")!.spec.replicas).toBeUndefined();
  });

  describe("a SQLite Steward with more than one replica is refused", () => {
    it("by the checks: two replicas, a rolling update, an autoscaler, a shared claim", () => {
      const twoReplicas = renderOwn(
        { resources: ["@ROOT@/overlays/sqlite"], patches: [{ path: "replicas.yaml" }] },
        {
          "replicas.yaml":
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: steward-sqlite\nspec:\n  replicas: 2\n",
        },
      );
      expect(problems(twoReplicas)).toContain("SQLite: replicas is 2, not 1");
      const rolling = renderOwn(
        { resources: ["@ROOT@/overlays/sqlite"], patches: [{ path: "rolling.yaml" }] },
        {
          "rolling.yaml":
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: steward-sqlite\nspec:\n  strategy:\n    $retainKeys: [type]\n    type: RollingUpdate\n",
        },
      );
      expect(problems(rolling)).toEqual(
        expect.arrayContaining([expect.stringMatching(/strategy is RollingUpdate, not Recreate/)]),
      );
      const autoscaled = renderOwn({
        resources: ["@ROOT@/overlays/sqlite"],
        components: ["@ROOT@/components/queue-autoscaling"],
      });
      expect(problems(autoscaled)).toEqual(
        expect.arrayContaining(["SQLite: an autoscaler is rendered", "SQLite: replicas is undefined, not 1"]),
      );
      const manyWriters = rendered.sqlite.map((d) =>
        d.kind === "PersistentVolumeClaim" ? { ...d, spec: { ...d.spec, accessModes: ["ReadWriteMany"] } } : d,
      );
      expect(problems(manyWriters)).toEqual(
        expect.arrayContaining([expect.stringMatching(/claim access modes \["ReadWriteMany"\], not ReadWriteOnce/)]),
      );
    });

    // The policy's CEL, evaluated as the API server does: its match conditions choose the
    // request, and it is denied when a validation is false.
    const policy = rendered.sqlite.find((d) => d.kind === "ValidatingAdmissionPolicy") ?? {};
    function admit(
      request: { subResource?: string; operation?: string },
      object: Obj,
      oldObject: Obj | null = null,
    ): "not matched" | "admitted" | string {
      const vars = {
        object,
        oldObject,
        request: { subResource: request.subResource ?? "", operation: request.operation ?? "CREATE" },
      };
      const matched = (policy.spec.matchConditions as Obj[]).every((c) => evaluate(c.expression, vars) === true);
      if (!matched) return "not matched";
      const denied = (policy.spec.validations as Obj[]).find((v) => evaluate(v.expression, vars) !== true);
      return denied ? `denied: ${denied.message}` : "admitted";
    }
    const sqliteDeployment = rendered.sqlite.find((d) => d.kind === "Deployment") ?? {};
    const redisDeployment = rendered.redis.find((d) => d.kind === "Deployment") ?? {};
    const scale = (name: string, replicas: number) => ({
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: { name, namespace: "steward" },
      spec: { replicas },
    });
    const changed = (change: (d: Obj) => void) => withDeployment([sqliteDeployment], change)[0]!;

    it("by the API server's admission policy: the overlay's own Deployment is admitted", () => {
      expect(policy.spec.matchConstraints.resourceRules[0].resources).toEqual(["deployments", "deployments/scale"]);
      expect(admit({}, sqliteDeployment)).toBe("admitted");
      expect(admit({ operation: "UPDATE" }, sqliteDeployment, sqliteDeployment)).toBe("admitted");
      expect(admit({ subResource: "scale", operation: "UPDATE" }, scale(sqliteDeployment.metadata.name, 1))).toBe(
        "admitted",
      );
      expect(admit({ subResource: "scale", operation: "UPDATE" }, scale(sqliteDeployment.metadata.name, 0))).toBe(
        "admitted",
      );
    });

    it("by the API server's admission policy: two replicas, kubectl scale, a rolling update, the label taken off", () => {
      expect(
        admit(
          {},
          changed((d) => (d.spec.replicas = 2)),
        ),
      ).toMatch(/^denied: Steward on embedded SQLite runs as one replica/);
      expect(
        admit(
          { operation: "UPDATE" },
          changed((d) => (d.spec.replicas = 3)),
          sqliteDeployment,
        ),
      ).toMatch(/^denied: .*one replica/);
      expect(admit({ subResource: "scale", operation: "UPDATE" }, scale("steward-sqlite", 2))).toMatch(
        /^denied: .*one replica/,
      );
      expect(admit({ subResource: "scale", operation: "UPDATE" }, scale("acme-steward-sqlite", 2))).toMatch(
        /^denied: .*one replica/,
      );
      expect(
        admit(
          {},
          changed((d) => (d.spec.strategy = { type: "RollingUpdate", rollingUpdate: { maxSurge: 1 } })),
        ),
      ).toMatch(/^denied: .*strategy Recreate/);
      const unlabelled = changed((d) => {
        delete d.metadata.labels["steward.dev/store"];
        d.spec.replicas = 2;
      });
      expect(admit({ operation: "UPDATE" }, unlabelled, sqliteDeployment)).toMatch(/^denied: /);
    });

    it("while the shared-store topology scales freely", () => {
      expect(admit({}, redisDeployment)).toBe("not matched");
      expect(admit({}, { ...redisDeployment, spec: { ...redisDeployment.spec, replicas: 5 } })).toBe("not matched");
      expect(admit({ subResource: "scale", operation: "UPDATE" }, scale(redisDeployment.metadata.name, 5))).toBe(
        "not matched",
      );
    });
  });
});
