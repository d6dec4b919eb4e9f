// `npm run prometheus-rule`: regenerates the PrometheusRule from deploy/prometheus/steward-rules.yml.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PROMETHEUS_RULE_FILE, RULES_FILE, prometheusRule } from "./prometheus-rule.js";

const root = fileURLToPath(new URL("../", import.meta.url));
writeFileSync(root + PROMETHEUS_RULE_FILE, prometheusRule(readFileSync(root + RULES_FILE, "utf8")));
process.stdout.write(`wrote ${PROMETHEUS_RULE_FILE}\n`);
