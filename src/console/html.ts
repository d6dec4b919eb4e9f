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

/** A time as people read it now: "3 min ago", "in 5 min"; also run in the browser to keep it current (so plain JS). */
export function relativeTime(at: number, now: number): string {
  const past = at <= now;
  const minutes = Math.floor(Math.abs(at - now) / 60_000);
  if (minutes < 1) return past ? "less than a minute ago" : "in less than a minute";
  const words =
    minutes < 60
      ? minutes + " min"
      : minutes < 48 * 60
        ? Math.floor(minutes / 60) + " h"
        : Math.floor(minutes / 1440) + " days";
  return past ? words + " ago" : "in " + words;
}

/** The absolute form: shown on hover and kept in `datetime`. */
export function absoluteTime(date: Date): string {
  return date
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, " UTC");
}

export function time(d: Date | number | undefined): Html {
  if (d === undefined) return html`<span>never</span>`;
  const date = typeof d === "number" ? new Date(d) : d;
  return html`<time datetime="${date.toISOString()}" title="${absoluteTime(date)}" data-rel>${relativeTime(date.getTime(), Date.now())}</time>`;
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
header a{color:#fff}header nav ul{display:flex;flex-wrap:wrap;gap:.3rem 1rem;list-style:none;margin:0;padding:0}
header nav a[aria-current]{font-weight:700;text-decoration:none;border-bottom:3px solid #fd8c73}
header form{margin-left:auto}main{padding:1rem;max-width:80rem}main:focus{outline:none}
.skip{position:absolute;left:-10000px;top:0}.skip:focus{left:.5rem;top:.5rem;z-index:10;background:#fff;color:#0969da;padding:.4rem .7rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #d0d7de;vertical-align:top}
th{background:#f6f8fa}a:focus,button:focus,input:focus,select:focus{outline:3px solid #0969da;outline-offset:1px}
.st{padding:0 .4rem;border-radius:1rem;border:1px solid #8c959f;font-size:.85em}.st-done{background:#dafbe1}.st-dead,.st-failed{background:#ffebe9}.st-skipped{background:#f6f8fa}
.st-running,.st-queued{background:#fff8c5}pre{background:#f6f8fa;padding:.6rem;overflow:auto;max-height:40rem}
form.filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:end}form.filters label{display:flex;flex-direction:column;font-size:.85em}
.note{color:#59636e}dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dt{font-weight:600}
.live-ctl{display:flex;gap:.8rem;align-items:center;flex-wrap:wrap}.live-ctl p{margin:0}
time[title]{text-decoration:underline dotted}
ul.chips{display:flex;flex-wrap:wrap;gap:.4rem;list-style:none;padding:0;margin:.6rem 0}ul.chips li{border:1px solid #8c959f;border-radius:1rem;padding:0 .3rem 0 .6rem;background:#f6f8fa}
ul.chips a{text-decoration:none;padding:0 .3rem}nav.presets{margin:.6rem 0}
@media (max-width:48rem){
header{gap:.5rem;padding:.5rem .6rem}header form{margin-left:0}main{padding:.6rem}
table{display:block;overflow-x:auto;max-width:100%}th,td{min-width:6rem}td[data-k=decision]{min-width:16rem}td,dd,code,a{overflow-wrap:anywhere}
dl{grid-template-columns:minmax(0,1fr)}dd{margin:0 0 .4rem}input,select{max-width:100%}
}
`;

/** A link in the navigation beyond the console's own (the handlers' pages). */
export interface NavLink {
  href: string;
  title: string;
  ownersOnly?: boolean;
}

/** `page` on the link to the page shown, `true` on the link to the list it belongs to (a delivery: Deliveries). */
function currentOf(href: string, path: string): "page" | "true" | undefined {
  const here = path.length > 1 ? path.replace(/\/$/, "") : path;
  if (here === href) return "page";
  return href !== "/console" && here.startsWith(`${href}/`) ? "true" : undefined;
}

// Live views: new fragments replace #live unless paused or while focus is inside it (the reader's
// place is never moved); new deliveries are announced in a polite status line. Relative times are
// kept current every 30 seconds. Scripts only add to pages that read fully without them.
const SCRIPT = `(function(){
var rel=${relativeTime.toString()};
function tick(){document.querySelectorAll("time[data-rel]").forEach(function(t){var at=Date.parse(t.getAttribute("datetime"));if(at)t.textContent=rel(at,Date.now());});}
setInterval(tick,30000);
var src=document.body.getAttribute("data-live"),live=document.getElementById("live");
if(!src||!live||!window.EventSource)return;
var paused=false,pending=null,HELD="Live updates paused; newer figures are waiting.";
var ctl=document.createElement("div");ctl.className="live-ctl";
var btn=document.createElement("button");btn.type="button";btn.textContent="Pause live updates";btn.setAttribute("aria-pressed","false");btn.setAttribute("aria-controls","live");
var say=document.createElement("p");say.id="live-status";say.className="note";say.setAttribute("role","status");say.setAttribute("aria-live","polite");
ctl.appendChild(btn);ctl.appendChild(say);live.parentNode.insertBefore(ctl,live);
function ids(){var o={};live.querySelectorAll("[data-delivery]").forEach(function(e){o[e.getAttribute("data-delivery")]=1;});return o;}
function apply(){if(pending===null||paused||live.contains(document.activeElement))return;var before=ids(),n=0;live.innerHTML=pending;pending=null;var after=ids();for(var k in after)if(!before[k])n++;if(n)say.textContent=n+(n===1?" new delivery":" new deliveries")+" (updated "+new Date().toISOString().slice(11,19)+" UTC)";}
btn.addEventListener("click",function(){paused=!paused;btn.setAttribute("aria-pressed",String(paused));say.textContent=paused?"Live updates paused.":"Live updates resumed.";apply();});
live.addEventListener("focusout",function(){setTimeout(apply,0);});
var s=new EventSource(src);s.addEventListener("fragment",function(e){live.setAttribute("data-received",String(Number(live.getAttribute("data-received")||0)+1));pending=e.data;if(paused&&say.textContent!==HELD)say.textContent=HELD;apply();});
})();`;

export function frame(
  page: PageOut,
  viewer: Viewer | undefined,
  nonce: string,
  links: readonly NavLink[] = [],
  path = "",
): string {
  const item = (href: string, title: string) =>
    html`<li><a href="${href}"${currentOf(href, path) ? html` aria-current="${currentOf(href, path)}"` : ""}>${title}</a></li>`;
  const nav = viewer
    ? html`<nav aria-label="Console"><ul>
        ${item("/console", "Overview")}
        ${item("/console/deliveries", "Deliveries")}
        ${viewer.owner ? html`${item("/console/dead", "Dead letters")}${item("/console/pauses", "Pauses")}` : ""}
        ${links.filter((l) => viewer.owner || !l.ownersOnly).map((l) => item(l.href, l.title))}
      </ul></nav>
      <form method="post" action="/console/logout"><input type="hidden" name="csrf" value="${viewer.csrf}">
        <span>Signed in as <strong>${viewer.login}</strong>${viewer.owner ? " (owner)" : ""}</span> <button type="submit">Sign out</button></form>`
    : "";
  return `<!doctype html>${
    html`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${page.title} · Steward</title><style>${new Html(STYLE)}</style></head>
<body${page.live ? html` data-live="${page.live}"` : ""}><a class="skip" href="#main">Skip to main content</a><header><a href="/console"><strong>Steward</strong></a>${nav}</header>
<main id="main" tabindex="-1"><h1>${page.title}</h1>${page.body}</main><script nonce="${nonce}">${new Html(SCRIPT)}</script></body></html>`
      .text
  }`;
}
