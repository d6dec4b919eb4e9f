// The fields a delivery is routed and listed by (action, installation id, repository full name),
// read from the JSON text without building the payload's object tree. The intake needs only these;
// the worker parses the payload when it runs. A tree per request cost more than this scan (measured
// on the example payloads, compiled: 25 us JSON.parse against 20 us here, before the collector's
// share) and would hold megabytes of heap for a large payload.
//
// The scan checks the payload's structure (one top-level object, balanced brackets, terminated
// strings), so a cut-off or garbled body is refused with 400; a value nested deeper than the
// routing fields is skipped over, not validated, and a verified body GitHub sent is JSON. Nested
// values are skipped by a regular expression from bracket to bracket (strings matched whole), and
// top-level strings with `indexOf` from quote to quote: no character is looked at one by one in
// JavaScript except the brackets.

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

/**
 * At an opening quote: the index of its closing quote. Found by jumping from quote to quote
 * (`indexOf` runs natively) rather than looking at every character; a quote is escaped when an
 * odd number of backslashes precede it.
 */
function closingQuote(t: string, open: number): number {
  for (let at = open + 1; ; at++) {
    at = t.indexOf('"', at);
    if (at === -1) throw new NotJson();
    let backslashes = 0;
    while (t.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/** Closers expected, innermost last: reused by every scan (the intake runs one scan at a time). */
const closers: number[] = [];

/**
 * From a position: everything up to the next bracket outside a string, whole strings included,
 * in one call into V8's compiled regular expressions (about a third faster than stepping from
 * quote to quote in JavaScript on the example payloads). Bounded per call, as each string
 * matched holds a little of the engine's backtracking stack.
 */
const UP_TO_BRACKET = /(?:[^"{}[\]]+|"[^"\\]*(?:\\[\s\S][^"\\]*)*"){0,256}/y;

/**
 * At `{` or `[`: the index just past its matching closer. Strings are matched whole by a regular
 * expression; a string it cannot hold (tens of millions of escapes overflow the engine's stack)
 * is scanned again quote by quote.
 */
function skipContainer(t: string, start: number): number {
  try {
    return skipContainerFast(t, start);
  } catch (error) {
    if (error instanceof RangeError) return skipContainerStepwise(t, start);
    throw error;
  }
}

function isBracket(code: number): boolean {
  return code === OPEN_BRACE || code === OPEN_BRACKET || code === CLOSE_BRACE || code === CLOSE_BRACKET;
}

function skipContainerFast(t: string, start: number): number {
  closers.length = 0;
  let at = start;
  for (;;) {
    const code = t.charCodeAt(at);
    if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      closers.push(code + 2); // } and ] are { and [ plus 2
      at++;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      if (closers.pop() !== code) throw new NotJson();
      if (closers.length === 0) return at + 1;
      at++;
    }
    UP_TO_BRACKET.lastIndex = at;
    // `test`, not `exec`: only the position is wanted, and exec would build an array and a copy of every stretch.
    UP_TO_BRACKET.test(t);
    const next = UP_TO_BRACKET.lastIndex;
    // No step and no bracket here: the text's end, or a quote whose string does not end.
    if (next === at && !isBracket(t.charCodeAt(at))) throw new NotJson();
    at = next;
  }
}

/** As skipContainerFast, stepping from quote to quote: only the characters between strings are looked at. */
function skipContainerStepwise(t: string, start: number): number {
  closers.length = 0;
  const n = t.length;
  let at = start;
  for (;;) {
    const quote = t.indexOf('"', at);
    const end = quote === -1 ? n : quote;
    for (; at < end; at++) {
      const code = t.charCodeAt(at);
      if (code === OPEN_BRACE || code === OPEN_BRACKET) closers.push(code + 2); // } and ] are { and [ plus 2
      else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
        if (closers.pop() !== code) throw new NotJson();
        if (closers.length === 0) return at + 1;
      }
    }
    if (quote === -1) throw new NotJson();
    at = closingQuote(t, quote) + 1;
  }
}

function nextOrEnd(t: string, char: string, from: number): number {
  const at = t.indexOf(char, from);
  return at === -1 ? t.length : at;
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/**
 * A copy of `value` that holds none of the text it was cut from. V8 makes a slice of 13 characters
 * or more a view into its parent string, and the parent is kept while the slice is: a repository's
 * full name kept with the delivery (the spool's queue until its move, a run, a cache key) held the
 * whole payload text, 2-25 KB, for as long as it was kept (a thousand kept names held 20 MB).
 * Joined to a character and sliced off again, the value's characters are copied into a string of
 * their own.
 */
function own(value: string): string {
  return value.length < 13 ? value : ` ${value}`.slice(1);
}

class Scanner {
  i = 0;
  /** Whether the last string `endOfString` passed held an escape. */
  escaped = false;
  /** The first backslash at or after the last string looked at (the scan only moves forward, so each is found once). */
  #backslash = -1;
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
    const end = closingQuote(this.text, this.i);
    if (this.#backslash <= this.i) this.#backslash = nextOrEnd(this.text, "\\", this.i + 1);
    this.escaped = this.#backslash < end;
    return end + 1;
  }

  /** At an opening quote: the decoded string, moving past it (a string of its own, never a view into the text). */
  string(): string {
    const start = this.i;
    const end = this.endOfString();
    this.i = end;
    return this.escaped ? this.decode(start, end) : own(this.text.slice(start + 1, end - 1));
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
      this.i = skipContainer(this.text, this.i);
      return;
    }
    LITERAL.lastIndex = this.i;
    if (!LITERAL.test(this.text)) throw new NotJson();
    this.i = LITERAL.lastIndex;
  }

  /** The member key `object` is at: where its quotes are, and its text when it held an escape. */
  #keyStart = 0;
  #keyEnd = 0;
  #keyDecoded: string | undefined;

  /** Whether the current member's key is `name`: compared in place, decoded only when it held an escape. */
  keyIs(name: string): boolean {
    const start = this.#keyStart;
    if (this.#keyDecoded !== undefined) return this.#keyDecoded === name;
    return this.#keyEnd - start === name.length + 2 && this.text.startsWith(name, start + 1);
  }

  /**
   * At `{`: calls `onMember` for each member (which must consume the value, and may ask `keyIs`
   * before it does), past the closing `}`. Nothing is allocated per member: a repository object
   * has about a hundred.
   */
  object(onMember: () => void): void {
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
      this.#keyStart = start;
      this.#keyEnd = end;
      this.#keyDecoded = this.escaped ? this.decode(start, end) : undefined;
      this.expect(":");
      this.space();
      onMember();
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
    s.object(() => {
      if (s.keyIs("action")) fields.action = s.stringOrSkip();
      else if (s.keyIs("installation")) {
        // A repeated key counts as JSON.parse counts it: the last one.
        fields.installationId = undefined;
        if (s.text[s.i] !== "{") return s.skipValue();
        s.object(() => {
          const isId = s.keyIs("id");
          const start = s.i;
          s.skipValue();
          if (!isId) return;
          const raw = text.slice(start, s.i);
          const id = Number(raw);
          fields.installationId = /^-?\d/.test(raw) && Number.isSafeInteger(id) ? id : undefined;
        });
      } else if (s.keyIs("repository")) {
        fields.repository = undefined;
        if (s.text[s.i] !== "{") return s.skipValue();
        s.object(() => {
          if (s.keyIs("full_name")) fields.repository = s.stringOrSkip();
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
