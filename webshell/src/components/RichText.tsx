// A message's Markdown, rendered by lib/markdown (marked + highlight.js,
// sanitized by DOMPurify): agent HTML is never interpreted. Each code block
// gets a copy button.
import { useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import { useT } from '../i18n';
import { renderMarkdown } from '../lib/markdown';

const COPIED_MS = 1500;

export function RichText({ text }: { text: string }) {
  const { t } = useT();
  // Only a message whose text changed is parsed again; Preact leaves the
  // DOM alone when the HTML string is the same.
  const html = useMemo(() => renderMarkdown(text), [text]);
  const ref = useRef<HTMLDivElement>(null);
  const label = t('msg.copyCode');
  // The buttons are added to the sanitized DOM here (trusted code), so the
  // sanitizer never has to allow buttons. They are lost whenever the HTML
  // changes (innerHTML is replaced), and this effect runs again then.
  useLayoutEffect(() => {
    const root = ref.current;
    if (!root) return;
    for (const pre of Array.from(root.querySelectorAll('pre.code'))) {
      if (pre.querySelector(':scope > .code__copy')) continue;
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'code__copy';
      b.textContent = label;
      b.setAttribute('aria-label', label);
      pre.prepend(b);
    }
  }, [html, label]);
  const onClick = (e: MouseEvent) => {
    const b = (e.target as Element | null)?.closest?.('.code__copy');
    if (!(b instanceof HTMLButtonElement)) return;
    const code = b.parentElement?.querySelector('code')?.textContent ?? '';
    void navigator.clipboard?.writeText(code).then(
      () => {
        b.textContent = t('msg.copied');
        setTimeout(() => (b.textContent = label), COPIED_MS);
      },
      () => {},
    );
  };
  return <div class="rich" ref={ref} onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />;
}
