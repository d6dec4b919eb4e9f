// The fields a large delivery is routed and listed by (action, installation id, repository full name),
// read from the JSON text without building the payload's object tree. The intake only needs these
// four; the worker parses the payload when it runs. Small payloads are parsed whole instead
// (delivery.ts: native JSON.parse is faster than this scan at a few KB, and its tree is handed to
// a run at once); past FULL_PARSE_MAX_CHARS a tree per request would be megabytes of heap.
//
// The scan checks the payload's structure (one top-level object, balanced brackets, terminated
// strings), so a cut-off or garbled body is refused with 400 as before; a value nested deeper than
// the routing fields is skipped over, not validated, and a verified body GitHub sent is JSON.

export interface RoutingFields {
  action: string | undefined;
  installationId: number | undefined;
  repository: string | undefined;
}

export type RoutingResult = { ok: true; fields: RoutingFields } | { ok: false; message: string };

class NotJson extends Error {}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

class Scanner {
  i = 0;
  /** Whether the last string `endOfString` passed held an escape. */
  escaped = false;
  constructor(readonly text: string) {}

  space(): void {
    while (this.i < this.text.length && isSpace(this.text.charCodeAt(this.i))) this.i++;
  }

  expect(char: string): void {
    this.space();
    if (this.text[this.i] !== char) throw new NotJson();
    this.i++;
  }

  /** At an opening quote: the index just after its closing quote. */
  endOfString(): number {
    const t = this.text;
    const n = t.length;
    this.escaped = false;
    for (let at = this.i + 1; at < n; at++) {
      const c = t.charCodeAt(at);
      if (c === QUOTE) return at + 1;
      if (c === BACKSLASH) {
        this.escaped = true;
        at++; // the escaped character is part of the string
      }
    }
    throw new NotJson();
  }

  /** At an opening quote: the decoded string, moving past it. */
  string(): string {
    const start = this.i;
    const end = this.endOfString();
    this.i = end;
    return this.escaped ? this.decode(start, end) : this.text.slice(start + 1, end - 1);
  }

  decode(start: number, end: number): string {
    try {
      return JSON.parse(this.text.slice(start, end)) as string;
    } catch {
      throw new NotJson();
    }
  }

  /** Past one value of any kind; nested objects and arrays only have their brackets and strings checked. */
  skipValue(): void {
    this.space();
    const c = this.text[this.i];
    if (c === '"') {
      this.i = this.endOfString();
      return;
    }
    if (c === "{" || c === "[") {
      // Closers expected, innermost last; a plain loop over char codes (no regex, no allocation).
      const t = this.text;
      const n = t.length;
      const open: number[] = [];
      for (let at = this.i; at < n; at++) {
        const code = t.charCodeAt(at);
        if (code === QUOTE) {
          this.i = at;
          at = this.endOfString() - 1;
        } else if (code === OPEN_BRACE || code === OPEN_BRACKET) open.push(code + 2); // } and ] are { and [ plus 2
        else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
          if (open.pop() !== code) throw new NotJson();
          if (open.length === 0) {
            this.i = at + 1;
            return;
          }
        }
      }
      throw new NotJson();
    }
    LITERAL.lastIndex = this.i;
    const m = LITERAL.exec(this.text);
    if (!m) throw new NotJson();
    this.i += m[0].length;
  }

  /**
   * At `{`: calls `onMember` for each member (which must consume the value), past the closing `}`.
   * Keys are compared in place (`is`), decoded only when they hold an escape.
   */
  object(onMember: (is: (name: string) => boolean) => void): void {
    this.expect("{");
    this.space();
    if (this.text[this.i] === "}") {
      this.i++;
      return;
    }
    for (;;) {
      this.space();
      if (this.text.charCodeAt(this.i) !== QUOTE) throw new NotJson();
      const start = this.i;
      const end = this.endOfString();
      this.i = end;
      const t = this.text;
      const decoded = this.escaped ? this.decode(start, end) : undefined;
      const is = (name: string) =>
        decoded !== undefined ? decoded === name : end - start === name.length + 2 && t.startsWith(name, start + 1);
      this.expect(":");
      this.space();
      onMember(is);
      this.space();
      const next = this.text[this.i++];
      if (next === "}") return;
      if (next !== ",") throw new NotJson();
    }
  }

  /** The value here if it is a string (consumed either way). */
  stringOrSkip(): string | undefined {
    if (this.text[this.i] === '"') return this.string();
    this.skipValue();
    return undefined;
  }
}

/** The routing fields of a payload, or why the text is not a JSON object. */
export function routingFields(text: string): RoutingResult {
  const s = new Scanner(text);
  const fields: RoutingFields = { action: undefined, installationId: undefined, repository: undefined };
  try {
    s.space();
    if (s.text[s.i] !== "{") {
      s.skipValue(); // valid JSON that is not an object is told apart from no JSON at all
      s.space();
      if (s.i !== text.length) throw new NotJson();
      return { ok: false, message: "payload must be a JSON object" };
    }
    s.object((key) => {
      if (key("action")) fields.action = s.stringOrSkip();
      else if (key("installation")) {
        // A repeated key counts as JSON.parse counts it: the last one.
        fields.installationId = undefined;
        if (s.text[s.i] !== "{") return s.skipValue();
        s.object((inner) => {
          const start = s.i;
          s.skipValue();
          if (!inner("id")) return;
          const raw = text.slice(start, s.i);
          const id = Number(raw);
          fields.installationId = /^-?\d/.test(raw) && Number.isSafeInteger(id) ? id : undefined;
        });
      } else if (key("repository")) {
        fields.repository = undefined;
        if (s.text[s.i] !== "{") return s.skipValue();
        s.object((inner) => {
          if (inner("full_name")) fields.repository = s.stringOrSkip();
          else s.skipValue();
        });
      } else s.skipValue();
    });
    s.space();
    if (s.i !== text.length) throw new NotJson();
  } catch (error) {
    if (error instanceof NotJson) return { ok: false, message: "payload is not valid JSON" };
    throw error;
  }
  return { ok: true, fields };
}
