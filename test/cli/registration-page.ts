// What a browser does with `steward register`'s page: submit its form to the hub (GitHub's
// manifest flow), follow the redirect back to the page's callback.
import { expect } from "vitest";

function unescapeHtml(s: string): string {
  return s.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n)));
}

export async function browse(registration: {
  url: string;
}): Promise<{ callback: Response; manifest: Record<string, unknown>; action: string }> {
  const html = await (await fetch(registration.url)).text();
  const action = unescapeHtml(/<form id="register" method="post" action="([^"]+)"/.exec(html)![1]!);
  const manifest = unescapeHtml(/name="manifest" value="([^"]+)"/.exec(html)![1]!);
  const created = await fetch(action, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ manifest }).toString(),
    redirect: "manual",
  });
  expect(created.status).toBe(302);
  const callback = await fetch(created.headers.get("location")!);
  return { callback, manifest: JSON.parse(manifest) as Record<string, unknown>, action };
}
