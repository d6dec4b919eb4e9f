// `steward sandbox [--port P] [--webhook-url URL]`: run the sandbox hub alone and print
// what a GitHub App needs to connect to it, as KEY=value lines on stdout.
import { createHub } from "../../sandbox/hub.js";

export const usage = `usage: steward sandbox [--port P] [--webhook-url URL]
  runs the sandbox hub (a local simulation of the GitHub API) alone and prints, as KEY=value
  lines, what a GitHub App needs to connect to it; with --webhook-url it sends deliveries there`;

export function parseSandboxArgs(args: string[]): { port?: number; webhookUrl?: string } | string {
  const out: { port?: number; webhookUrl?: string } = {};
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i]!.split("=", 2) as [string, string | undefined];
    const value = inline ?? args[i + 1];
    if (flag === "--port" || flag === "--webhook-url") {
      if (value === undefined) return `${flag} needs a value`;
      if (inline === undefined) i++;
      if (flag === "--port") {
        const port = Number(value);
        if (!Number.isInteger(port) || port < 0 || port > 65535) return `--port must be a port number (got "${value}")`;
        out.port = port;
      } else {
        if (!/^https?:\/\//.test(value)) return `--webhook-url must be an http(s) URL (got "${value}")`;
        out.webhookUrl = value;
      }
    } else {
      return `unknown option "${args[i]}"`;
    }
  }
  return out;
}

export async function run(args: string[]): Promise<number> {
  const parsed = parseSandboxArgs(args);
  if (typeof parsed === "string") {
    process.stderr.write(`steward sandbox: ${parsed}\n${usage}\n`);
    return 2;
  }
  const hub = await createHub({
    ...(parsed.port !== undefined ? { port: parsed.port } : {}),
    ...(parsed.webhookUrl ? { webhookUrl: parsed.webhookUrl } : {}),
  });
  const { env } = hub;
  for (const key of [
    "GITHUB_API_URL",
    "APP_ID",
    "PRIVATE_KEY_PATH",
    "WEBHOOK_SECRET",
    "SANDBOX_ORG",
    "SANDBOX_REPO",
    "GITHUB_CLIENT_ID",
    "GITHUB_CLIENT_SECRET",
  ] as const) {
    process.stdout.write(`${key}=${env[key]}\n`);
  }
  process.stderr.write(
    `steward sandbox: hub listening on ${hub.url}` +
      (parsed.webhookUrl
        ? `, delivering webhooks to ${parsed.webhookUrl}`
        : " (no --webhook-url: no deliveries are sent)") +
      `\ncontrol surface: ${hub.url}/_sandbox/ (see packages/sandbox-hub/README.md); Ctrl-C to stop\n`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await hub.close();
  return 0;
}
