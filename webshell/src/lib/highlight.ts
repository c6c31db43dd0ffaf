// Syntax highlighting shared by Markdown code blocks, the file viewer and
// the diffs: highlight.js core plus the languages below (not all of them,
// to keep the bundle small).
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
import makefile from 'highlight.js/lib/languages/makefile';
import markdown from 'highlight.js/lib/languages/markdown';
import plaintext from 'highlight.js/lib/languages/plaintext';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

const languages = { bash, c, cpp, diff, dockerfile, go, ini, java, javascript, json, makefile, markdown, plaintext, python, rust, shell, sql, typescript, xml, yaml };
// plaintext: what diff2html asks for when it knows no language for a file.
for (const [name, def] of Object.entries(languages)) hljs.registerLanguage(name, def);
// Aliases the registered grammars do not declare themselves.
hljs.registerAliases(['golang'], { languageName: 'go' });
hljs.registerAliases(['sh-session', 'console'], { languageName: 'shell' });
hljs.registerAliases(['patch'], { languageName: 'diff' });
hljs.registerAliases(['toml'], { languageName: 'ini' });
// File extensions the grammars do not declare as aliases.
hljs.registerAliases(['htm', 'vue'], { languageName: 'xml' });
hljs.registerAliases(['bashrc', 'profile'], { languageName: 'bash' });
hljs.registerAliases(['jsonl'], { languageName: 'json' });

export { hljs };

/** The registered name of a language or alias (golang, sh, ts, …), if known. */
export function canonicalLanguage(lang: string): string | undefined {
  if (!lang) return undefined;
  const def = hljs.getLanguage(lang);
  return def ? Object.keys(languages).find((name) => hljs.getLanguage(name) === def) : undefined;
}

/**
 * The language of a file by its name: its extension, or the whole name
 * for the files known by name (Makefile, Dockerfile, go.mod).
 */
export function languageOfPath(path: string): string | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
  if (name === 'makefile' || name === 'gnumakefile' || name.endsWith('.mk')) return 'makefile';
  if (name === 'dockerfile' || name.startsWith('dockerfile.') || name.endsWith('.dockerfile')) return 'dockerfile';
  if (name === 'go.mod' || name === 'go.sum' || name === 'go.work') return undefined;
  const dot = name.lastIndexOf('.');
  const ext = dot >= 0 ? name.slice(dot + 1) : name.replace(/^\./, '');
  const lang = canonicalLanguage(ext);
  return lang === 'plaintext' ? undefined : lang;
}

export function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/**
 * Highlighted HTML of text in lang (highlight.js escapes the text it
 * wraps), or the escaped text with lang '' when the language is unknown.
 */
export function highlightCode(text: string, lang: string | undefined): { html: string; lang: string } {
  const name = lang ? canonicalLanguage(lang) : undefined;
  if (name) {
    try {
      return { html: hljs.highlight(text, { language: name, ignoreIllegals: true }).value, lang: name };
    } catch {
      // fall through to plain, escaped text
    }
  }
  return { html: escapeHTML(text), lang: '' };
}
