// app.yml (a GitHub App manifest in YAML) as the JSON manifest GitHub's registration form takes,
// pointed at this registration: GitHub sends the code back to `redirectUrl`, and deliveries go
// to `hookUrl` when one is given (WEBHOOK_PROXY_URL, or --webhook-url).
import { parse } from "yaml";

export interface ManifestTarget {
  redirectUrl: string;
  hookUrl?: string;
}

export function manifestFromAppYml(text: string, target: ManifestTarget): Record<string, unknown> {
  const doc: unknown = parse(text);
  if (typeof doc !== "object" || doc === null || Array.isArray(doc))
    throw new Error("app.yml is not a mapping of manifest fields");
  const manifest = { ...(doc as Record<string, unknown>) };
  if (typeof manifest.url !== "string")
    throw new Error("app.yml has no url (the app's homepage), which GitHub requires");
  manifest.redirect_url = target.redirectUrl;
  if (target.hookUrl) {
    const hook =
      typeof manifest.hook_attributes === "object" && manifest.hook_attributes !== null
        ? (manifest.hook_attributes as Record<string, unknown>)
        : {};
    manifest.hook_attributes = { ...hook, url: target.hookUrl, active: true };
  }
  return manifest;
}
