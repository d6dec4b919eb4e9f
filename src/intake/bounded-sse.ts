// A Server-Sent Events parser (the WHATWG event-stream format) that never holds more than a
// bound: the webhook proxy's channel is input from outside, and a general client (the
// `eventsource` package) buffers each event whole however large it is. Bytes go in as they
// arrive; an event's data is kept only up to `maxEventBytes`, and `screen` may refuse an event
// from the head of its data, after which the rest of it is counted and discarded, not kept.

export interface SseEvent {
  /** The `event:` field; "message" when none was given. */
  type: string;
  data: Buffer;
  /** The last `id:` seen on the stream (the spec's last event ID), "" when none. */
  lastEventId: string;
}

export type SseDrop = { type: string; reason: string };

export interface BoundedSseOptions {
  /** An event whose data exceeds this many bytes is dropped as it arrives. */
  maxEventBytes: number;
  /** How much of an event's data `screen` sees before the event is kept whole (the head). */
  headBytes: number;
  /**
   * Asked once per event of type `message` when its data reached `headBytes` (not asked of
   * shorter events: they are judged whole). A reason drops the event.
   */
  screen(head: Buffer): string | undefined;
  /** Events of other types are discarded as their data arrives (the relay's `ready`, `ping`). */
  wanted(type: string): boolean;
}

/** Longest field name kept (the spec's are at most five bytes); a longer one names no field. */
const MAX_FIELD = 16;
/** Longest `event:` or `id:` value kept; a longer one is cut there. */
const MAX_SMALL_VALUE = 1024;

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;

type Sink = "data" | "event" | "id" | "none";

/** The index of the next `byte` in `chunk` from `from`, or the chunk's length when there is none. */
function nextOf(chunk: Buffer, byte: number, from: number): number {
  const at = chunk.indexOf(byte, from);
  return at === -1 ? chunk.length : at;
}

export class BoundedSseParser {
  readonly #opts: BoundedSseOptions;
  // The line being read.
  #inValue = false;
  #field: number[] = [];
  #sink: Sink = "none";
  #skipSpace = false;
  #small: number[] = [];
  #afterCr = false;
  #started = false;
  // The event being read.
  #type = "";
  #pieces: Buffer[] = [];
  #bytes = 0;
  #hasData = false;
  #screened = false;
  #dropped: string | undefined;
  #lastEventId = "";
  // Out.
  #events: (SseEvent | SseDrop)[] = [];

  constructor(opts: BoundedSseOptions) {
    this.#opts = opts;
  }

  /** Reads `chunk`; returns the events (and drops) it completed, in order. */
  push(bytes: Uint8Array): (SseEvent | SseDrop)[] {
    const chunk = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    // Where the next LF and CR are from the current position, searched natively and again only once passed.
    let lf = -1;
    let cr = -1;
    let i = 0;
    if (!this.#started && chunk.length > 0) {
      this.#started = true;
      // A UTF-8 byte order mark at the start of the stream is not part of it.
      if (chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) i = 3;
    }
    while (i < chunk.length) {
      const byte = chunk[i]!;
      if (this.#afterCr) {
        this.#afterCr = false;
        if (byte === LF) {
          i++;
          continue;
        }
      }
      if (this.#inValue) {
        // The rest of the value up to the line's end, at once.
        if (lf < i) lf = nextOf(chunk, LF, i);
        if (cr < i) cr = nextOf(chunk, CR, i);
        const end = Math.min(lf, cr);
        let from = i;
        if (this.#skipSpace && from < end) {
          this.#skipSpace = false;
          if (chunk[from] === SPACE) from++;
        }
        if (from < end) this.#value(chunk.subarray(from, end));
        if (end === chunk.length) break;
        i = end;
        this.#endLine(chunk[i] === CR);
        i++;
        continue;
      }
      if (byte === LF || byte === CR) {
        this.#endLine(byte === CR);
      } else if (byte === COLON) {
        this.#startValue();
      } else if (this.#field.length <= MAX_FIELD) {
        this.#field.push(byte);
      }
      i++;
    }
    const out = this.#events;
    this.#events = [];
    return out;
  }

  #startValue(): void {
    this.#inValue = true;
    this.#skipSpace = true;
    const name = this.#field.length > MAX_FIELD ? "" : String.fromCharCode(...this.#field);
    // A line starting with a colon is a comment: its name is empty, and it goes nowhere.
    this.#sink = name === "data" || name === "event" || name === "id" ? name : "none";
    this.#small = [];
    if (this.#sink === "data") this.#startDataLine();
  }

  #startDataLine(): void {
    // Lines of one event's data are joined with a newline.
    if (this.#hasData) this.#addData(Buffer.from("\n"));
    this.#hasData = true;
  }

  #value(bytes: Uint8Array): void {
    if (this.#sink === "data") this.#addData(bytes);
    else if (this.#sink !== "none") {
      const room = MAX_SMALL_VALUE - this.#small.length;
      for (let k = 0; k < bytes.length && k < room; k++) this.#small.push(bytes[k]!);
    }
  }

  #addData(bytes: Uint8Array): void {
    this.#bytes += bytes.length;
    if (this.#dropped !== undefined) return;
    if (this.#type !== "" && !this.#opts.wanted(this.#type)) {
      this.#drop("");
      return;
    }
    if (this.#bytes > this.#opts.maxEventBytes) {
      this.#drop(`larger than ${this.#opts.maxEventBytes} bytes`);
      return;
    }
    // A copy: a piece of a chunk would keep the whole chunk alive.
    this.#pieces.push(Buffer.from(bytes));
    if (!this.#screened && this.#bytes >= this.#opts.headBytes && this.#wantedType()) {
      this.#screened = true;
      const head = Buffer.concat(this.#pieces);
      this.#pieces = [head];
      const reason = this.#opts.screen(head.subarray(0, this.#opts.headBytes));
      if (reason !== undefined) this.#drop(reason);
    }
  }

  #wantedType(): boolean {
    return this.#opts.wanted(this.#type || "message");
  }

  #drop(reason: string): void {
    this.#dropped = reason;
    this.#pieces = [];
  }

  #endLine(cr: boolean): void {
    this.#afterCr = cr;
    if (this.#inValue) {
      if (this.#sink === "event") this.#type = Buffer.from(this.#small).toString("utf8");
      // An id holding NUL is ignored (the spec).
      else if (this.#sink === "id" && !this.#small.includes(0))
        this.#lastEventId = Buffer.from(this.#small).toString("utf8");
    } else if (this.#field.length === 0) {
      this.#dispatch();
    } else {
      // A field name alone: an empty value.
      const name = this.#field.length > MAX_FIELD ? "" : String.fromCharCode(...this.#field);
      if (name === "data") this.#startDataLine();
      else if (name === "event") this.#type = "";
      else if (name === "id") this.#lastEventId = "";
    }
    this.#inValue = false;
    this.#field = [];
    this.#sink = "none";
  }

  #dispatch(): void {
    const type = this.#type || "message";
    if (this.#hasData) {
      if (this.#dropped !== undefined) {
        if (this.#dropped !== "") this.#events.push({ type, reason: this.#dropped });
      } else if (this.#opts.wanted(type)) {
        this.#events.push({ type, data: Buffer.concat(this.#pieces), lastEventId: this.#lastEventId });
      }
    }
    this.#type = "";
    this.#pieces = [];
    this.#bytes = 0;
    this.#hasData = false;
    this.#screened = false;
    this.#dropped = undefined;
  }
}
