// Markdown as Steward's reasons and summaries are written (code spans, emphasis, links), rendered
// for a page: no HTML passes through (html: false escapes it), links go only to http(s) addresses,
// and anything else stays text. One line at a time where a table cell holds it (`inline`).
import { createRequire } from "node:module";
import type MarkdownItLibrary from "markdown-it";
import { Html } from "./html.js";

type MarkdownIt = InstanceType<typeof MarkdownItLibrary>;

let md: MarkdownIt | undefined;

/**
 * The renderer, made at the first page that renders markdown: a service whose console nobody
 * opens never loads the library.
 */
function renderer(): MarkdownIt {
  if (md) return md;
  const Markdown = createRequire(import.meta.url)("markdown-it") as typeof MarkdownItLibrary;
  const made = new Markdown({ html: false, linkify: false, typographer: false });
  // Only web addresses: no javascript:, data:, file: or relative links out of a reason.
  made.validateLink = (url: string) => /^https?:\/\//i.test(url.trim());
  const defaultLinkOpen =
    made.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
  made.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    // Out of the console: the page's address is not handed to GitHub or anyone else.
    tokens[idx]!.attrSet("rel", "noopener noreferrer");
    return defaultLinkOpen(tokens, idx, options, env, self);
  };
  return (md = made);
}

/** A block of markdown (paragraphs, lists, tables). */
export function markdown(text: string): Html {
  return new Html(renderer().render(text));
}

/** One line of markdown, for a table cell or a list item. */
export function markdownInline(text: string): Html {
  return new Html(renderer().renderInline(text));
}
