// Who made a request, as effects and rate-limit buckets name it.
import type { AuthInfo } from "./types.js";

export function actorOf(auth: AuthInfo): string {
  switch (auth.kind) {
    case "installation":
      return `installation:${auth.installationId}`;
    case "user":
      return `user:${auth.login}`;
    case "app":
      return `app:${auth.appId}`;
    default:
      return "anonymous";
  }
}
