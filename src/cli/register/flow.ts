// The browser side of GitHub's App Manifest flow, served on 127.0.0.1: a page whose form posts
// the manifest to GitHub with a fresh `state`; GitHub sends the person back to /callback with a
// code, which is exchanged (POST /app-manifests/{code}/conversions) for the app's credentials,
// written to .env. No secret is ever shown on a page or printed.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { writeEnvValues } from "./env-file.js";
import { esc as escapeHtml } from "../../console/html.js";

export interface RegistrationOptions {
  /** The JSON manifest; its redirect_url is set to this server's /callback. */
  manifest: (redirectUrl: string) => Record<string, unknown>;
  /** GitHub's web site, e.g. https://github.com (the sandbox hub's URL in a sandbox). */
  githubUrl: string;
  /** REST base URL for the conversion. */
  apiUrl: string;
  /** Register under this organisation instead of the signed-in person. */
  org?: string;
  port: number;
  envFile: string;
  /** Extra settings written with the app's (e.g. GITHUB_API_URL for a GitHub Enterprise or sandbox). */
  extraEnv?: Record<string, string>;
}

export interface RegisteredApp {
  id: number;
  slug: string;
  name: string;
  owner: string | undefined;
  htmlUrl: string | undefined;
}

export interface Registration {
  /** Open this in a browser. */
  url: string;
  /** Resolves once the credentials are written to the env file; rejects when the exchange fails. */
  done: Promise<RegisteredApp>;
  close(): Promise<void>;
}

function page(res: ServerResponse, status: number, body: string, nonce?: string): void {
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": `default-src 'none'; form-action *; ${nonce ? `script-src 'nonce-${nonce}'` : ""}`,
  });
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Register Steward as a GitHub App</title></head><body><main>${body}</main></body></html>`,
  );
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

interface Conversion {
  id: number;
  slug: string;
  name: string;
  pem: string;
  webhook_secret: string | null;
  client_id: string;
  client_secret: string;
  owner?: { login?: string } | null;
  html_url?: string;
}

async function convert(apiUrl: string, code: string): Promise<Conversion> {
  const res = await fetch(`${apiUrl.replace(/\/+$/, "")}/app-manifests/${encodeURIComponent(code)}/conversions`, {
    method: "POST",
    headers: {
      accept: "application/vnd.github+json",
      "x-github-api-version": "2022-11-28",
      "user-agent": "steward-register",
    },
  });
  if (res.status !== 201) {
    const text = await res.text().catch(() => "");
    let message = text.slice(0, 200);
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {
      // not JSON: the text is the message
    }
    throw new Error(
      `POST /app-manifests/{code}/conversions answered ${res.status} ${JSON.stringify(message)} (a code works once, within an hour)`,
    );
  }
  const app = (await res.json()) as Conversion;
  if (
    typeof app.id !== "number" ||
    typeof app.pem !== "string" ||
    typeof app.client_id !== "string" ||
    typeof app.client_secret !== "string"
  ) {
    throw new Error("the conversion's answer lacks the app's id, pem or OAuth client");
  }
  return app;
}

export async function startRegistration(opts: RegistrationOptions): Promise<Registration> {
  const state = randomBytes(16).toString("hex");
  let settle!: { resolve: (app: RegisteredApp) => void; reject: (e: Error) => void };
  const done = new Promise<RegisteredApp>((resolve, reject) => (settle = { resolve, reject }));
  done.catch(() => undefined);
  let finished = false;
  let base = "";
  const newAppUrl = opts.org
    ? `${opts.githubUrl}/organizations/${encodeURIComponent(opts.org)}/settings/apps/new`
    : `${opts.githubUrl}/settings/apps/new`;

  async function callback(url: URL, res: ServerResponse): Promise<void> {
    const code = url.searchParams.get("code") ?? "";
    if (!sameText(url.searchParams.get("state") ?? "", state) || code === "") {
      page(
        res,
        400,
        "<h1>Not this registration</h1><p>The state does not match the page this server showed. Start again from its first page.</p>",
      );
      return;
    }
    if (finished) {
      page(res, 409, "<h1>Already registered</h1><p>This registration is finished.</p>");
      return;
    }
    finished = true;
    try {
      const app = await convert(opts.apiUrl, code);
      await writeEnvValues(opts.envFile, {
        APP_ID: String(app.id),
        PRIVATE_KEY: app.pem,
        ...(app.webhook_secret ? { WEBHOOK_SECRET: app.webhook_secret } : {}),
        GITHUB_CLIENT_ID: app.client_id,
        GITHUB_CLIENT_SECRET: app.client_secret,
        ...opts.extraEnv,
      });
      const registered: RegisteredApp = {
        id: app.id,
        slug: app.slug,
        name: app.name,
        owner: app.owner?.login ?? undefined,
        htmlUrl: app.html_url,
      };
      page(
        res,
        200,
        `<h1>${escapeHtml(app.name)} is registered</h1><p>App id ${app.id}. Its credentials (APP_ID, PRIVATE_KEY, WEBHOOK_SECRET, GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET) are in ${escapeHtml(opts.envFile)}. Next: install the app on your repositories, then run <code>steward start</code>.</p>`,
      );
      settle.resolve(registered);
    } catch (error) {
      page(res, 502, `<h1>Registration failed</h1><p>${escapeHtml((error as Error).message)}</p>`);
      settle.reject(error as Error);
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", base || "http://127.0.0.1");
    if (req.method !== "GET") {
      res.writeHead(405, { allow: "GET" }).end();
      return;
    }
    if (url.pathname === "/callback") {
      callback(url, res).catch(() => res.destroy());
      return;
    }
    if (url.pathname !== "/") {
      res.writeHead(404).end();
      return;
    }
    const manifest = JSON.stringify(opts.manifest(`${base}/callback`));
    const nonce = randomBytes(12).toString("base64");
    page(
      res,
      200,
      `<h1>Register Steward as a GitHub App</h1>
<p>The form sends the manifest built from app.yml to ${escapeHtml(newAppUrl)}${opts.org ? ` (organisation ${escapeHtml(opts.org)})` : ""}; GitHub then sends you back here and the app's credentials are written to ${escapeHtml(opts.envFile)}.</p>
<form id="register" method="post" action="${escapeHtml(`${newAppUrl}?state=${state}`)}">
<input type="hidden" name="manifest" value="${escapeHtml(manifest)}">
<button type="submit">Register on GitHub</button>
</form>
<script nonce="${nonce}">document.getElementById("register").submit();</script>`,
      nonce,
    );
  }

  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, "127.0.0.1", () => resolve());
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${base}/`,
    done,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
