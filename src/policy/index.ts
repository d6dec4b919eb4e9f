// `steward/policy`: the policy engine itself, for handlers that read or validate policy files as
// files (the built-in policy check, the secrets handler's documents) rather than receiving their
// own validated section on the context.
export { POLICY_FILE, isPolicyPath, isDocumentPath } from "./paths.js";
export { mergePolicy, policyDocuments, policySections, isPlainObject } from "./merge.js";
export { resolvePolicy, type PolicySource } from "./resolve.js";
export { analysePolicyText, validatePolicyText } from "./validate.js";
export { simulatePolicy, simulatedHandlers } from "./impact.js";
