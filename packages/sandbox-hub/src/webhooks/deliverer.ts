// Sends app webhook deliveries: signed, in order per installation, asynchronously
// (never inside an API response), and records each delivery and the answer it got.
import { randomUUID } from "node:crypto";
import type { DeliveryRecord } from "../core/types.js";
import { encodeBody, signatureHeaders } from "./sign.js";
import { appendBounded } from "../core/bounded-log.js";

export interface HookConfig {
  url: string | undefined;
  secret: string;
  content_type: "json" | "form";
  insecure_ssl: "0" | "1";
}

export interface StoredDelivery extends DeliveryRecord {
  url: string | null;
  request: { headers: Record<string, string>; payload: Record<string, unknown> };
  response: { headers: Record<string, string>; payload: string | null };
}

export interface DelivererDeps {
  hookId: number;
  appId: number;
  config: HookConfig;
  now(): Date;
  timestamp(d?: Date): string;
  nextId(): number;
  timeoutMs?: number;
  /** Deliveries remembered (default MAX_DELIVERY_RECORDS). */
  maxRecords?: number;
}

const USER_AGENT = "GitHub-Hookshot/sandbox";

/**
 * Deliveries the hub remembers for the deliveries API and redelivery (the newest). GitHub keeps
 * three days of them; a sandbox sending thousands an hour keeps a count instead, payloads included.
 */
export const MAX_DELIVERY_RECORDS = 5_000;

export class Deliverer {
  /** In id order: a record gets its id when it is made, after its attempt. */
  readonly records: StoredDelivery[] = [];
  private readonly byIds = new Map<number, StoredDelivery>();
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly waiters = new Set<() => void>();

  constructor(private readonly deps: DelivererDeps) {}

  /** Queue a delivery behind earlier ones of the same installation; resolves once it was attempted. */
  send(
    event: string,
    payload: Record<string, unknown>,
    opts: { installationId: number | null; guid?: string; redelivery?: boolean },
  ): Promise<StoredDelivery | undefined> {
    const key = String(opts.installationId ?? "app");
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = previous.then(() => this.attempt(event, payload, opts)).catch(() => undefined);
    this.chains.set(key, next);
    return next;
  }

  /** Every queued delivery has been attempted. */
  async settled(): Promise<void> {
    let size = -1;
    while (size !== this.records.length || this.chains.size > 0) {
      size = this.records.length;
      const pending = [...this.chains.entries()];
      await Promise.all(pending.map(([, p]) => p));
      for (const [k, p] of pending) if (this.chains.get(k) === p) this.chains.delete(k);
    }
  }

  onRecord(listener: () => void): () => void {
    this.waiters.add(listener);
    return () => this.waiters.delete(listener);
  }

  byId(id: number): StoredDelivery | undefined {
    return this.byIds.get(id);
  }

  private async attempt(
    event: string,
    payload: Record<string, unknown>,
    opts: { installationId: number | null; guid?: string; redelivery?: boolean },
  ): Promise<StoredDelivery | undefined> {
    const { config } = this.deps;
    if (!config.url) return undefined;
    const guid = opts.guid ?? randomUUID();
    const { body, type } = encodeBody(payload, config.content_type);
    const headers: Record<string, string> = {
      "Content-Type": type,
      "User-Agent": USER_AGENT,
      "X-GitHub-Event": event,
      "X-GitHub-Delivery": guid,
      "X-GitHub-Hook-ID": String(this.deps.hookId),
      "X-GitHub-Hook-Installation-Target-ID": String(this.deps.appId),
      "X-GitHub-Hook-Installation-Target-Type": "integration",
      ...(config.secret ? signatureHeaders(config.secret, body) : {}),
    };
    const started = Date.now();
    const deliveredAt = this.deps.now();
    let statusCode = 0;
    let status = "Couldn't connect to server";
    let responseHeaders: Record<string, string> = {};
    let responseBody: string | null = null;
    try {
      const res = await fetch(config.url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(this.deps.timeoutMs ?? 10_000),
      });
      statusCode = res.status;
      status = res.ok ? "OK" : `Invalid HTTP Response: ${res.status}`;
      responseHeaders = Object.fromEntries(res.headers.entries());
      responseBody = await res.text();
    } catch (err) {
      if ((err as Error).name === "TimeoutError") status = "timed out";
    }
    const repository = payload.repository as { id?: number } | undefined;
    const record: StoredDelivery = {
      guid,
      id: this.deps.nextId(),
      event,
      action: typeof payload.action === "string" ? payload.action : null,
      installation_id: opts.installationId,
      repository_id: repository?.id ?? null,
      delivered_at: this.deps.timestamp(deliveredAt),
      redelivery: opts.redelivery ?? false,
      status_code: statusCode,
      status,
      duration: (Date.now() - started) / 1000,
      payload,
      url: config.url,
      request: { headers: { ...headers }, payload },
      response: { headers: responseHeaders, payload: responseBody },
    };
    this.byIds.set(record.id, record);
    appendBounded(this.records, record, this.deps.maxRecords ?? MAX_DELIVERY_RECORDS, (dropped) => {
      for (const d of dropped) this.byIds.delete(d.id);
    });
    for (const w of this.waiters) w();
    return record;
  }
}
