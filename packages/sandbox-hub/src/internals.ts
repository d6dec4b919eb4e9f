// Classes a test harness may instrument (a leak guard learning every token and secret the hub
// issues). Not for driving the hub: use the main entry for that.
export { TokenStore } from "./core/tokens.js";
export { Deliverer } from "./webhooks/deliverer.js";
export { SecretsDomain } from "./secrets/domain.js";
export { ChecksDomain } from "./checks/domain.js";
