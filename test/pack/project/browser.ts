// Browser entry point (bundled by Vite): the daemon, token and working
// directory come in the page's fragment; the result lands in window.__result.
import { chat, type ChatResult } from './chat.js';

declare global {
  interface Window {
    __result?: ChatResult | { error: string };
  }
}

const p = new URLSearchParams(location.hash.slice(1));
chat(p.get('base') ?? '', p.get('token') ?? '', p.get('cwd') ?? '', 'hello from the browser').then(
  (r) => {
    window.__result = r;
  },
  (e: unknown) => {
    window.__result = { error: String(e) };
  },
);
