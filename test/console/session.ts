// A minimal cookie-keeping HTTP client for the console tests, and sign-in through the
// sandbox hub's OAuth pages exactly as a browser would walk them (no shortcut into the session).
import { expect } from "vitest";

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

export class Visitor {
  readonly cookies = new Map<string, string>();
  constructor(readonly base: string) {}

  #remember(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair!.indexOf("=");
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/max-age=0/i.test(line) || value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  async request(
    url: string,
    init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const absolute = url.startsWith("http") ? url : `${this.base}${url}`;
    const sameOrigin = new URL(absolute).origin === new URL(this.base).origin;
    const res = await fetch(absolute, {
      method: init.method ?? (init.form ? "POST" : "GET"),
      redirect: "manual",
      headers: {
        ...(sameOrigin && this.cookies.size ? { cookie: this.cookieHeader() } : {}),
        ...(init.form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
        ...init.headers,
      },
      ...(init.form ? { body: new URLSearchParams(init.form).toString() } : {}),
    });
    if (sameOrigin) this.#remember(res);
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  /** Follows redirects (303/302) like a browser, returning the last answer. */
  async visit(url: string, init: Parameters<Visitor["request"]>[1] = {}): Promise<Answer & { url: string }> {
    let current = url;
    let answer = await this.request(current, init);
    for (let hops = 0; answer.status >= 300 && answer.status < 400 && hops < 10; hops++) {
      current = new URL(answer.headers.get("location")!, current.startsWith("http") ? current : this.base).toString();
      answer = await this.request(current);
    }
    return { ...answer, url: current };
  }

  /** The CSRF token the console put in its forms. */
  csrfFrom(page: string): string {
    const m = /name="csrf" value="([^"]+)"/.exec(page);
    expect(m, "page has a form with a CSRF token").not.toBeNull();
    return m![1]!;
  }
}

/** Sign in as `login` through the hub's authorize page (choosing the user as a person would). */
export async function signIn(base: string, login: string): Promise<Visitor> {
  const v = new Visitor(base);
  const start = await v.request("/console/login");
  expect(start.status).toBe(303);
  const authorize = start.headers.get("location")!;
  const chooser = await v.request(authorize);
  expect(chooser.status).toBe(200);
  const link = new RegExp(`href="([^"]+)">Sign in as ${login}<`).exec(chooser.text);
  expect(link, `the authorize page offers ${login}`).not.toBeNull();
  const chosen = await v.request(new URL(link![1]!.replace(/&#38;/g, "&"), authorize).toString());
  expect(chosen.status).toBe(302);
  const back = await v.visit(chosen.headers.get("location")!);
  expect(back.status).toBe(200);
  expect(v.cookies.has("steward_session")).toBe(true);
  return v;
}
