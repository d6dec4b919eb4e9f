// Suite-wide leak guard (a vitest setupFiles module, so it runs in every test file's worker).
// It learns every secret the suite uses — values registered for redaction, tokens the sandbox
// hub issues, webhook secrets it signs with, secret values it opens — and watches where text
// leaves Steward: process output (console, stdout/stderr, pino's direct fd writes), check-run
// payloads the hub stores, and SQLite store files. After each test file, any plaintext hit
// fails that file. Child processes' output is handed in with `leakGuard.output(...)`.
// Pages any server in the test process renders (HTML, event streams, the schema) and every
// response's header block (redirects, cookies) are watched too: the console's output. So is what
// leaves for an observability backend: OTLP trace exports and error-report envelopes, as sent.
import fs from "node:fs";
import { ClientRequest, ServerResponse } from "node:http";
import { gunzipSync } from "node:zlib";
import { format } from "node:util";
import { afterAll } from "vitest";
import { onSecretRegistered } from "../../src/log/redact.js";
import { ChecksDomain, Deliverer, SecretsDomain, TokenStore } from "@steward/sandbox-hub/internals";
import { SqliteStore } from "../../src/store/sqlite/store.js";

/** Shorter values would match ordinary words in output (and are too weak to be real secrets). */
const MIN_SECRET_LENGTH = 8;
/** Bound on captured output per test file, so a chatty file cannot exhaust memory. */
const MAX_CAPTURE_CHARS = 64 * 1024 * 1024;
// Classic 40-character tokens and the newer ~520-character `ghs_<app id>_<JWT>`.
const TOKEN_SHAPE = /\bgh[opsur]_[A-Za-z0-9_.-]{20,}/g;

export interface Leak {
  /** Where it was found (never the value). */
  where: string;
  /** What kind of secret (never the value). */
  kind: string;
}

const tokens = new Set<string>();
const others = new Map<string, string>(); // form -> kind
const captured: { label: string; text: string }[] = [];
let capturedChars = 0;
const storeFiles = new Set<string>();
let scans = 0;

function addSecret(value: unknown, kind: string): void {
  if (typeof value !== "string") return;
  const trimmed = value.trim();
  if (trimmed.length < MIN_SECRET_LENGTH) return;
  if (/^gh[opsur]_[A-Za-z0-9_.-]{20,}$/.test(trimmed)) {
    tokens.add(trimmed);
    return;
  }
  if (trimmed.includes("-----BEGIN")) {
    // A PEM leaks as soon as one of its body lines does, however it was re-wrapped.
    for (const line of trimmed.split(/\r?\n/)) {
      const body = line.trim();
      if (body.length >= 16 && !body.startsWith("-----")) others.set(body, kind);
    }
    return;
  }
  others.set(trimmed, kind);
}

function capture(label: string, chunk: unknown): void {
  if (capturedChars > MAX_CAPTURE_CHARS) return;
  const text =
    typeof chunk === "string"
      ? chunk
      : Buffer.isBuffer(chunk) || chunk instanceof Uint8Array
        ? Buffer.from(chunk).toString("utf8")
        : String(chunk);
  capturedChars += text.length;
  captured.push({ label, text });
}

function findIn(where: string, text: string, leaks: Leak[]): void {
  for (const match of text.matchAll(TOKEN_SHAPE)) {
    // A long token's match may run on into a following dot or dash: a prefix that is a token counts.
    if (tokens.has(match[0]) || tokens.has(match[0].replace(/[.-]+$/, ""))) leaks.push({ where, kind: "token" });
  }
  for (const [form, kind] of others) if (text.includes(form)) leaks.push({ where, kind });
}

export const leakGuard = {
  /** Declare a secret value used by a test (e.g. one a child process was given). */
  secret(value: string, kind = "test secret"): void {
    addSecret(value, kind);
  },
  /** Hand in text that left a process (e.g. a child's stdout and stderr). */
  output(label: string, text: string): void {
    capture(label, text);
  },
  /** Scan a store file (the SQLite database, its WAL) at the end of the test file. */
  storeFile(path: string): void {
    storeFiles.add(path);
  },
  /** Check one text now without keeping it (for tests of the guard itself). */
  scan(label: string, text: string): Leak[] {
    const leaks: Leak[] = [];
    findIn(label, text, leaks);
    return leaks;
  },
  /** Every plaintext hit so far. */
  findLeaks(): Leak[] {
    const leaks: Leak[] = [];
    for (const { label, text } of captured) findIn(label, text, leaks);
    for (const path of storeFiles) {
      for (const file of [path, `${path}-wal`]) {
        let bytes: Buffer;
        try {
          bytes = fs.readFileSync(file);
        } catch {
          continue;
        }
        // SQLite keeps text as UTF-8; latin1 maps bytes 1:1, so ASCII secrets are found as is.
        findIn(`store ${file}`, bytes.toString("latin1"), leaks);
      }
    }
    scans++;
    return leaks;
  },
  /** How many secrets and haystacks are watched (for the report). */
  stats(): { secrets: number; outputs: number; stores: number; scans: number } {
    return { secrets: tokens.size + others.size, outputs: captured.length, stores: storeFiles.size, scans };
  },
};

// ---- where secrets come from ---------------------------------------------------------------
onSecretRegistered((value) => addSecret(value, "registered secret"));

const issueInstallationToken = TokenStore.prototype.issueInstallationToken;
TokenStore.prototype.issueInstallationToken = function (
  this: TokenStore,
  ...args: Parameters<TokenStore["issueInstallationToken"]>
) {
  const issued = issueInstallationToken.apply(this, args);
  addSecret(issued.token, "installation token");
  return issued;
};
const userToken = TokenStore.prototype.userToken;
TokenStore.prototype.userToken = function (this: TokenStore, login: string) {
  const token = userToken.call(this, login);
  addSecret(token, "user token");
  return token;
};

const userToServerToken = TokenStore.prototype.issueUserToServerToken;
TokenStore.prototype.issueUserToServerToken = function (this: TokenStore, login: string) {
  const token = userToServerToken.call(this, login);
  addSecret(token, "user-to-server token");
  return token;
};

type Patchable = Record<string, (...args: any[]) => any>;

const secretsProto = SecretsDomain.prototype as unknown as Patchable;
const open = secretsProto.open!;
secretsProto.open = function (this: unknown, ...args: unknown[]) {
  const value = open.apply(this, args);
  addSecret(value, "secret value");
  return value;
};
const outOfBand = secretsProto.setSecretOutOfBand!;
secretsProto.setSecretOutOfBand = function (this: unknown, ...args: unknown[]) {
  addSecret(args[2], "secret value");
  return outOfBand.apply(this, args);
};

const delivererProto = Deliverer.prototype as unknown as Patchable;
const attempt = delivererProto.attempt!;
delivererProto.attempt = function (this: { deps: { config: { secret: string } } }, ...args: unknown[]) {
  addSecret(this.deps.config.secret, "webhook secret");
  return attempt.apply(this, args);
};

// ---- where text leaves ---------------------------------------------------------------------
const checksProto = ChecksDomain.prototype as unknown as Patchable;
for (const method of ["createRun", "updateRun"]) {
  const original = checksProto[method]!;
  checksProto[method] = function (this: unknown, ...args: unknown[]) {
    capture(`check run ${method === "createRun" ? "create" : "update"}`, JSON.stringify(args[1] ?? null));
    return original.apply(this, args);
  };
}

const close = SqliteStore.prototype.close;
SqliteStore.prototype.close = function (this: SqliteStore) {
  const result = close.call(this);
  // Read now: tests remove their temp dirs before the end-of-file scan. The log holds what another
  // connection to the file (the CLI's, a second store in the test) has not checkpointed yet.
  for (const file of [this.path, `${this.path}-wal`]) {
    try {
      capture(`store ${file}`, fs.readFileSync(file).toString("latin1"));
    } catch {
      // closed twice, or never written
    }
  }
  return result;
};

const writeSync = fs.writeSync;
fs.writeSync = function (fd: number, buffer: unknown, ...rest: unknown[]) {
  if (fd === 1 || fd === 2) capture(fd === 1 ? "stdout (fd)" : "stderr (fd)", buffer);
  return (writeSync as (...a: unknown[]) => number)(fd, buffer, ...rest);
} as typeof fs.writeSync;

for (const stream of ["stdout", "stderr"] as const) {
  const target = process[stream];
  const write = target.write.bind(target);
  target.write = ((chunk: unknown, ...rest: unknown[]) => {
    capture(stream, chunk);
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof target.write;
}

// Rendered pages: bodies of HTML, event-stream and schema responses, and each response's headers.
const RENDERED = /^content-type:\s*(text\/html|text\/event-stream|application\/schema\+json)/im;
const responseProto = ServerResponse.prototype as unknown as Patchable & { _header?: string | null };
const headersSeen = new WeakSet<object>();
function captureResponse(res: { _header?: string | null }, chunk: unknown): void {
  const header = typeof res._header === "string" ? res._header : undefined;
  if (header === undefined) return;
  if (!headersSeen.has(res)) {
    headersSeen.add(res);
    capture("response headers", header);
  }
  if (chunk !== undefined && chunk !== null && typeof chunk !== "function" && RENDERED.test(header))
    capture("rendered page", chunk);
}
for (const method of ["write", "end"] as const) {
  const original = responseProto[method]!;
  responseProto[method] = function (this: { _header?: string | null }, ...args: unknown[]) {
    const result = original.apply(this, args);
    captureResponse(this, args[0]);
    return result;
  };
}

// Requests to an OTLP traces endpoint or an error-report (Sentry) ingest: their bodies, decompressed.
const TELEMETRY_PATH = /\/v1\/traces(?:\?|$)|\/api\/[^/]+\/envelope\/?(?:\?|$)/;
const requestProto = ClientRequest.prototype as unknown as Patchable;
const telemetryBodies = new WeakMap<object, Buffer[]>();
function telemetryChunk(req: ClientRequest, chunk: unknown): void {
  if (!TELEMETRY_PATH.test(req.path)) return;
  if (typeof chunk !== "string" && !Buffer.isBuffer(chunk) && !(chunk instanceof Uint8Array)) return;
  const chunks = telemetryBodies.get(req) ?? [];
  chunks.push(Buffer.from(chunk));
  telemetryBodies.set(req, chunks);
}
const requestWrite = requestProto.write!;
requestProto.write = function (this: ClientRequest, ...args: unknown[]) {
  telemetryChunk(this, args[0]);
  return requestWrite.apply(this, args);
};
const requestEnd = requestProto.end!;
requestProto.end = function (this: ClientRequest, ...args: unknown[]) {
  if (typeof args[0] !== "function") telemetryChunk(this, args[0]);
  const chunks = telemetryBodies.get(this);
  if (chunks) {
    telemetryBodies.delete(this);
    let body = Buffer.concat(chunks);
    if (String(this.getHeader("content-encoding") ?? "").includes("gzip")) {
      try {
        body = gunzipSync(body);
      } catch {
        // kept as sent
      }
    }
    capture(`telemetry export ${this.path.replace(/\?.*$/, "")}`, body.toString("utf8"));
  }
  return requestEnd.apply(this, args);
};

for (const method of ["log", "info", "warn", "error", "debug", "trace"] as const) {
  const original = console[method].bind(console);
  console[method] = (...args: unknown[]) => {
    capture(`console.${method}`, format(...args));
    original(...args);
  };
}

afterAll(() => {
  const leaks = leakGuard.findLeaks();
  if (leaks.length === 0) return;
  const where = [...new Set(leaks.map((l) => `${l.kind} in ${l.where}`))].slice(0, 10).join("; ");
  // Never the value itself: the report must not become the leak.
  throw new Error(`leak guard: ${leaks.length} plaintext secret occurrence(s): ${where}`);
});
