// Organisation custom property values (GET /orgs/{org}/properties/values), readable by an
// installation with the organisation's "Custom properties" read permission.
import type { Hub, Router } from "../core/types.js";
import type { PropertiesDomain } from "./domain.js";
import { requireOrg } from "../scoped-values/routes.js";

export function installPropertiesRoutes(hub: Hub, router: Router, properties: PropertiesDomain): void {
  router.add(
    "GET",
    "/orgs/{org}/properties/values",
    (req) => {
      const org = requireOrg(hub, req);
      const repos = properties.select(org.login, req.query.get("repository_query")).sort((a, b) => a.id - b.id);
      return hub.paginate(
        req,
        repos.map((r) => properties.json(r)),
      );
    },
    { permission: { organization_custom_properties: "read" } },
  );
}
