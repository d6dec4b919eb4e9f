// Steward's Octokit class: the plugins Probot's own Octokit carries (throttling, retry,
// pagination, REST methods, GitHub Enterprise compatibility, config files) with Probot's app
// authentication (octokit-auth-probot), composed here rather than imported from probot's index:
// that index loads Probot's HTTP server (express and its middleware, about 5 MB of heap), which
// the service never uses. Probot itself is loaded only when a Probot app is hosted.
// Left out: Probot's request-logging plugin (every request at debug level, with its body);
// Steward records its own API calls (call-scope.ts). The service's clients (client.ts) give the
// throttling plugin Steward's own rate-limit answers; one built without them waits and retries
// as Probot's does.
// Composed in: credentials go to the API origin only (origin-guard.ts), and a handler run counts
// the requests it made (modules/hosted-scope.ts).
import { Octokit } from "@octokit/core";
import { enterpriseCompatibility } from "@octokit/plugin-enterprise-compatibility";
import { paginateRest } from "@octokit/plugin-paginate-rest";
import { restEndpointMethods } from "@octokit/plugin-rest-endpoint-methods";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { config } from "@probot/octokit-plugin-config";
import { createProbotAuth } from "octokit-auth-probot";
import { credentialsToApiOnly } from "./origin-guard.js";
import { countHostedRequests } from "../modules/hosted-scope.js";

type Options = NonNullable<ConstructorParameters<typeof Octokit>[0]> & { throttle?: Record<string, unknown> };

/** A client built without its own rate-limit answers waits as GitHub asks and tries again, as Probot's does, and says so. */
const WAIT_AND_RETRY = (retryAfter: number, options: { method: string; url: string }, octokit: Octokit) => {
  octokit.log.warn(`rate limit reached by ${options.method} ${options.url}; retrying in ${retryAfter} s`);
  return true;
};

export const StewardOctokit = Octokit.plugin(
  throttling,
  retry,
  paginateRest,
  restEndpointMethods,
  enterpriseCompatibility,
  config,
  credentialsToApiOnly,
  countHostedRequests,
).defaults((instance: Options) => ({
  authStrategy: createProbotAuth,
  ...instance,
  throttle: { enabled: true, onRateLimit: WAIT_AND_RETRY, onSecondaryRateLimit: WAIT_AND_RETRY, ...instance?.throttle },
}));
