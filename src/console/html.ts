// HTML for the console: escaping, the page frame, small building blocks. Every value that
// reaches a page goes through `esc` (text and attributes alike).

export function esc(value: unknown): string {
  return String(value ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Trusted HTML: only what the console composed itself from escaped parts. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** Tagged template: interpolations are escaped unless they are Html (or arrays of Html). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new Html(out);
}

function render(v: unknown): string {
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join("");
  if (v === undefined || v === null || v === false) return "";
  return esc(v);
}

export function time(d: Date | number | undefined): Html {
  if (d === undefined) return html`<span>never</span>`;
  const date = typeof d === "number" ? new Date(d) : d;
  const iso = date.toISOString();
  return html`<time datetime="${iso}">${iso.replace("T", " ").replace(/\.\d+Z$/, " UTC")}</time>`;
}

export function statusBadge(status: string): Html {
  return html`<span class="st st-${status}">${status}</span>`;
}

export interface Viewer {
  login: string;
  owner: boolean;
  csrf: string;
}

export interface PageOut {
  status?: number;
  title: string;
  body: Html;
  /** The page's live section: an SSE stream URL whose `fragment` events replace #live. */
  live?: string;
}

const STYLE = `
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1f2328;background:#fff}
header{display:flex;gap:1rem;align-items:center;flex-wrap:wrap;padding:.6rem 1rem;background:#24292f;color:#fff}
header a{color:#fff}header nav ul{display:flex;gap:1rem;list-style:none;margin:0;padding:0}
header form{margin-left:auto}main{padding:1rem;max-width:80rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #d0d7de;vertical-align:top}
th{background:#f6f8fa}a:focus,button:focus,input:focus,select:focus{outline:3px solid #0969da;outline-offset:1px}
.st{padding:0 .4rem;border-radius:1rem;border:1px solid #8c959f;font-size:.85em}.st-done{background:#dafbe1}.st-dead,.st-failed{background:#ffebe9}.st-skipped{background:#f6f8fa}
.st-running,.st-queued{background:#fff8c5}pre{background:#f6f8fa;padding:.6rem;overflow:auto;max-height:40rem}
form.filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:end}form.filters label{display:flex;flex-direction:column;font-size:.85em}
.note{color:#59636e}dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dt{font-weight:600}
`;

/** A link in the navigation beyond the console's own (the handlers' pages). */
export interface NavLink {
  href: string;
  title: string;
  ownersOnly?: boolean;
}

export function frame(
  page: PageOut,
  viewer: Viewer | undefined,
  nonce: string,
  links: readonly NavLink[] = [],
): string {
  const nav = viewer
    ? html`<nav aria-label="Console"><ul>
        <li><a href="/console">Overview</a></li>
        <li><a href="/console/deliveries">Deliveries</a></li>
        ${viewer.owner ? html`<li><a href="/console/dead">Dead letters</a></li>` : ""}
        ${links.filter((l) => viewer.owner || !l.ownersOnly).map((l) => html`<li><a href="${l.href}">${l.title}</a></li>`)}
      </ul></nav>
      <form method="post" action="/console/logout"><input type="hidden" name="csrf" value="${viewer.csrf}">
        <span>Signed in as <strong>${viewer.login}</strong>${viewer.owner ? " (owner)" : ""}</span> <button type="submit">Sign out</button></form>`
    : "";
  const script = page.live
    ? html`<script nonce="${nonce}">(function(){if(!window.EventSource)return;var s=new EventSource(${new Html(JSON.stringify(page.live).replace(/</g, "\\u003c"))});s.addEventListener("fragment",function(e){var l=document.getElementById("live");if(l)l.innerHTML=e.data;});})();</script>`
    : "";
  return `<!doctype html>${
    html`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${page.title} · Steward</title><style>${new Html(STYLE)}</style></head>
<body><header><a href="/console"><strong>Steward</strong></a>${nav}</header>
<main id="main"><h1>${page.title}</h1>${page.body}</main>${script}</body></html>`.text
  }`;
}
