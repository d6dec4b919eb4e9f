// `steward register [--port P] [--org ORG] [--app-yml FILE] [--env-file FILE] [--webhook-url URL]`:
// GitHub's App Manifest flow. Serves a page on 127.0.0.1 that posts app.yml as a manifest to
// GitHub, exchanges the code GitHub returns, and writes the app's credentials to .env.
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { manifestFromAppYml } from "../register/manifest.js";
import { startRegistration } from "../register/flow.js";

export const usage = `usage: steward register [--port P] [--org ORG] [--app-yml FILE] [--env-file FILE] [--webhook-url URL]
  registers Steward as a GitHub App from app.yml (GitHub's App Manifest flow): open the page it
  serves on http://127.0.0.1:P (default 3000), confirm on GitHub, and APP_ID, PRIVATE_KEY,
  WEBHOOK_SECRET, GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET are written to .env (mode 0600,
  other lines kept). --org registers it under an organisation. Deliveries go to --webhook-url,
  else WEBHOOK_PROXY_URL, else app.yml's hook_attributes.url.
  GITHUB_URL (default https://github.com, or from GHE_HOST) and GITHUB_API_URL choose the server`;

interface RegisterArgs {
  port: number;
  org?: string;
  appYml: string;
  envFile: string;
  webhookUrl?: string;
}

export function parseRegisterArgs(args: string[]): RegisterArgs | string {
  const out: RegisterArgs = { port: 3000, appYml: "app.yml", envFile: ".env" };
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    if (!["--port", "--org", "--app-yml", "--env-file", "--webhook-url"].includes(flag)) return `unknown option "${args[i]}"`;
    const value = inline ?? args[++i];
    if (value === undefined || value === "") return `${flag} needs a value`;
    if (flag === "--port") {
      const port = Number(value);
      if (!Number.isInteger(port) || port < 0 || port > 65535) return `--port must be a port number (got "${value}")`;
      out.port = port;
    } else if (flag === "--org") out.org = value;
    else if (flag === "--app-yml") out.appYml = value;
    else if (flag === "--env-file") out.envFile = value;
    else {
      if (!/^https?:\/\//.test(value)) return `--webhook-url must be an http(s) URL (got "${value}")`;
      out.webhookUrl = value;
    }
  }
  return out;
}

/** GitHub's web site and REST API for this environment. */
export function serverUrls(env: NodeJS.ProcessEnv): { githubUrl: string; apiUrl: string } {
  const trim = (u: string) => u.replace(/\/+$/, "");
  const ghe = env.GHE_HOST ? `${env.GHE_PROTOCOL ?? "https"}://${env.GHE_HOST}` : undefined;
  return {
    githubUrl: trim(env.GITHUB_URL ?? ghe ?? "https://github.com"),
    apiUrl: trim(env.GITHUB_API_URL ?? (ghe ? `${ghe}/api/v3` : "https://api.github.com")),
  };
}

export async function run(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = parseRegisterArgs(args);
  if (typeof parsed === "string") {
    process.stderr.write(`steward register: ${parsed}\n${usage}\n`);
    return 2;
  }
  let appYml: string;
  try {
    appYml = await readFile(resolve(parsed.appYml), "utf8");
  } catch (e) {
    process.stderr.write(`steward register: cannot read ${parsed.appYml}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}\n`);
    return 1;
  }
  const hookUrl = parsed.webhookUrl ?? env.WEBHOOK_PROXY_URL;
  const { githubUrl, apiUrl } = serverUrls(env);
  let registration;
  try {
    manifestFromAppYml(appYml, { redirectUrl: "http://127.0.0.1/callback" }); // refuse a bad app.yml before serving
    registration = await startRegistration({
      manifest: (redirectUrl) => manifestFromAppYml(appYml, { redirectUrl, ...(hookUrl ? { hookUrl } : {}) }),
      githubUrl,
      apiUrl,
      ...(parsed.org ? { org: parsed.org } : {}),
      port: parsed.port,
      envFile: resolve(parsed.envFile),
      ...(apiUrl !== "https://api.github.com" && env.GITHUB_API_URL ? { extraEnv: { GITHUB_API_URL: apiUrl } } : {}),
    });
  } catch (e) {
    process.stderr.write(`steward register: ${(e as Error).message}\n`);
    return 1;
  }
  process.stdout.write(`Open ${registration.url} in a browser to register the app on ${githubUrl}${parsed.org ? ` for ${parsed.org}` : ""}.\n`);
  try {
    const app = await registration.done;
    process.stdout.write(
      `Registered ${app.name} (app id ${app.id}${app.owner ? `, owner ${app.owner}` : ""}). APP_ID, PRIVATE_KEY, WEBHOOK_SECRET, GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET are in ${parsed.envFile}.\n` +
        `Next: install it${app.htmlUrl ? ` (${app.htmlUrl}/installations/new)` : ""}, then run steward start.\n`,
    );
    return 0;
  } catch (e) {
    process.stderr.write(`steward register: ${(e as Error).message}\n`);
    return 1;
  } finally {
    await registration.close();
  }
}
