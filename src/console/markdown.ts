// Markdown as Steward's reasons and summaries are written (code spans, emphasis, links), rendered
// for a page: no HTML passes through (html: false escapes it), links go only to http(s) addresses,
// and anything else stays text. One line at a time where a table cell holds it (`inline`).
import MarkdownIt from "markdown-it";
import { Html } from "./html.js";

const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
// Only web addresses: no javascript:, data:, file: or relative links out of a reason.
md.validateLink = (url: string) => /^https?:\/\//i.test(url.trim());
const defaultLinkOpen =
  md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  // Out of the console: the page's address is not handed to GitHub or anyone else.
  tokens[idx]!.attrSet("rel", "noopener noreferrer");
  return defaultLinkOpen(tokens, idx, options, env, self);
};

/** A block of markdown (paragraphs, lists, tables). */
export function markdown(text: string): Html {
  return new Html(md.render(text));
}

/** One line of markdown, for a table cell or a list item. */
export function markdownInline(text: string): Html {
  return new Html(md.renderInline(text));
}
