// The storage host behind the short-lived download URLs (job and run logs). GitHub answers a
// log request with a 302 to a storage host on another origin; the hub serves these from a
// listener of their own, so a client that carried its token across origins is caught.
import type { RouteTable } from "../core/router.js";
import { HubError } from "../core/types.js";
import type { SandboxHub } from "../sandbox-hub.js";

export const BLOB_PATH = "/_sandbox/blobs/";

export function installBlobRoutes(hub: SandboxHub, router: RouteTable): void {
  router.add(
    "GET",
    `${BLOB_PATH}{token}`,
    (req) => {
      const blob = hub.blob(req.params.token!);
      if (blob === undefined) throw new HubError(404, "Not Found");
      if (blob === "expired") throw new HubError(403, "Request has expired");
      return { status: 200, raw: blob.raw, headers: { "Content-Type": blob.contentType } };
    },
    { auth: "none" },
  );
}
