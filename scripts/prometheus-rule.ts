// The PrometheusRule (Prometheus Operator) in deploy/kubernetes is deploy/prometheus/steward-rules.yml
// wrapped as the operator's custom resource: the same groups, text and comments, so the alerts a
// cluster loads are the ones promtool checks and tests. `npm run prometheus-rule` writes it; a test
// fails when the two differ.

/** Where the rules live and where their PrometheusRule is written, from the repository's root. */
export const RULES_FILE = "deploy/prometheus/steward-rules.yml";
export const PROMETHEUS_RULE_FILE = "deploy/kubernetes/components/steward/prometheusrule.yaml";

/** The PrometheusRule manifest for the text of the rules file. */
export function prometheusRule(rulesText: string): string {
  const start = rulesText.search(/^groups:/m);
  if (start < 0) throw new Error(`${RULES_FILE} has no top-level groups:`);
  const groups = rulesText
    .slice(start)
    .split("\n")
    .map((line) => (line === "" ? line : `  ${line}`))
    .join("\n");
  return `# Generated from ${RULES_FILE} by \`npm run prometheus-rule\`: edit that file, not this one.
# Prometheus Operator loads it where its ruleSelector matches these labels; needs the
# monitoring.coreos.com CRDs (remove it in your overlay, as the ServiceMonitor, if the cluster has none).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: steward
  labels:
    app.kubernetes.io/component: alerts
spec:
${groups}`;
}
