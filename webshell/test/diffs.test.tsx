// @vitest-environment jsdom
// (diff2html rebuilds highlighted lines from each attribute's nodeName,
// which happy-dom gets wrong: jsdom, like a browser, gets it right.)
// Diffs drawn by diff2html with highlight.js, side by side or unified; the
// file viewer highlighted by the file's name; the permission card showing
// the diff or command it asks about, with Allow once as the primary answer.
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import { DiffBlock } from '../src/components/DiffBlock';
import { FilesView } from '../src/components/FilesView';
import { LangContext } from '../src/i18n';
import { languageOfPath } from '../src/lib/highlight';
import type { WorkspaceApi } from '../src/state/types';
import { ev, FakeApi, flush } from './fixtures';
import { mountPane } from './mount-pane';

afterEach(() => {
  cleanup();
  localStorage.clear();
});

const GO_PATCH = [
  'diff --git a/main.go b/main.go',
  '--- a/main.go',
  '+++ b/main.go',
  '@@ -1,3 +1,3 @@',
  ' package main',
  '-func main() { println("old") }',
  '+func main() { println("new") }',
  ' // end',
].join('\n');

async function drawn(testId: string): Promise<HTMLElement> {
  await waitFor(() => expect(screen.getByTestId(testId).dataset.state).toBe('drawn'));
  return screen.getByTestId(testId);
}

describe('DiffBlock', () => {
  it('side by side: two columns, the changed line on each, highlighted as Go', async () => {
    render(<DiffBlock patch={GO_PATCH} format="side-by-side" testId="d" />);
    const d = await drawn('d');
    const sides = d.querySelectorAll('.d2h-file-side-diff');
    expect(sides).toHaveLength(2);
    expect(sides[0]!.querySelector('.d2h-del .d2h-code-line-ctn')!.textContent).toContain('println("old")');
    expect(sides[1]!.querySelector('.d2h-ins .d2h-code-line-ctn')!.textContent).toContain('println("new")');
    expect([...d.querySelectorAll('.hljs-keyword')].map((e) => e.textContent)).toContain('func');
  });

  it('unified: one column with both lines', async () => {
    render(<DiffBlock patch={GO_PATCH} format="line-by-line" testId="d" />);
    const d = await drawn('d');
    expect(d.querySelectorAll('.d2h-file-side-diff')).toHaveLength(0);
    const text = d.querySelector('.d2h-file-diff')!.textContent!;
    expect(text.indexOf('println("old")')).toBeLessThan(text.indexOf('println("new")'));
  });

  it('markup in a file is text, never elements', async () => {
    const patch = ['--- a/x.html', '+++ b/x.html', '@@ -0,0 +1 @@', '+<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>'].join('\n');
    render(<DiffBlock patch={patch} format="line-by-line" testId="d" />);
    const d = await drawn('d');
    expect(d.querySelector('img, script')).toBeNull();
    expect(d.textContent).toContain('<img src=x onerror=');
  });

  it('an edit (old and new text) becomes a patch', async () => {
    render(<DiffBlock edit={{ path: '/w/a.ts', oldText: 'const a = 1;\n', newText: 'const a = 2;\n' }} format="line-by-line" testId="d" />);
    const d = await drawn('d');
    expect(d.querySelector('.d2h-del .d2h-code-line-ctn')!.textContent).toContain('const a = 1;');
    expect(d.querySelector('.d2h-ins .d2h-code-line-ctn')!.textContent).toContain('const a = 2;');
  });
});

describe('file viewer', () => {
  it('knows a language by the file name', () => {
    expect(languageOfPath('cmd/main.go')).toBe('go');
    expect(languageOfPath('src/App.tsx')).toBe('typescript');
    expect(languageOfPath('Makefile')).toBe('makefile');
    expect(languageOfPath('Dockerfile')).toBe('dockerfile');
    expect(languageOfPath('notes.txt')).toBeUndefined();
    expect(languageOfPath('LICENSE')).toBeUndefined();
  });

  it('highlights a Go file, shows a text file plain', async () => {
    const files: Record<string, string> = { 'main.go': 'package main\n\nfunc main() {}\n', 'notes.txt': 'func is a word\n' };
    const entry = (name: string) => ({ path: name, name, type: 'file' as const, size: 1, mode: '-rw-r--r--', modifiedAt: '2026-01-01T00:00:00Z' });
    const api = {
      workspace: {
        list: () => Promise.resolve({ path: '.', truncated: false, entries: Object.keys(files).map(entry) }),
        read: (path: string) => Promise.resolve({ path, size: 1, offset: 0, length: 1, binary: false, encoding: 'utf-8' as const, content: files[path]!, modifiedAt: '2026-01-01T00:00:00Z', truncated: false }),
      },
    } as unknown as WorkspaceApi;
    render(
      <LangContext.Provider value="en">
        <FilesView api={api} />
      </LangContext.Provider>,
    );
    await flush();
    fireEvent.click(screen.getByText('main.go'));
    await flush();
    const text = screen.getByTestId('ws-file-text');
    expect(text.dataset.lang).toBe('go');
    expect([...text.querySelectorAll('.hljs-keyword')].map((e) => e.textContent)).toEqual(['package', 'func']);
    fireEvent.click(screen.getByText('notes.txt'));
    await flush();
    expect(screen.getByTestId('ws-file-text').dataset.lang).toBeUndefined();
    expect(screen.getByTestId('ws-file-text').querySelector('.hljs-keyword')).toBeNull();
  });
});

describe('permission card', () => {
  const options = [
    { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
    { optionId: 'allow_always', name: 'Allow always', kind: 'allow_always' },
    { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
  ];

  it('shows the diff it asks about; Allow once is primary, Allow always is not', async () => {
    const api = new FakeApi('S');
    await mountPane(api);
    api.stream.push(
      ev('S', 11, 'turn.started', { promptId: 'p1', kind: 'prompt' }),
      ev('S', 12, 'tool_call.started', {
        promptId: 'p1', toolCallId: 'tool-1', title: 'Edit demo.txt', kind: 'edit', status: 'pending', interrupted: false,
        content: [{ type: 'diff', path: '/w/demo.txt', oldText: 'one\n', newText: 'one\ntwo\n' }],
      }),
      ev('S', 13, 'permission.requested', { promptId: 'p1', requestId: 'r1', toolCallId: 'tool-1', title: 'Edit demo.txt', options }),
    );
    await flush();
    const d = await drawn('permission-diff');
    expect(d.dataset.path).toBe('/w/demo.txt');
    expect(d.querySelector('.d2h-ins .d2h-code-line-ctn')!.textContent).toContain('two');
    const once = screen.getByRole('button', { name: 'Allow once' });
    const always = screen.getByRole('button', { name: 'Allow always' });
    expect(once.classList.contains('btn--primary')).toBe(true);
    expect(always.classList.contains('btn--primary')).toBe(false);
  });

  it('shows the command it asks to run', async () => {
    const api = new FakeApi('S');
    await mountPane(api);
    api.stream.push(
      ev('S', 11, 'turn.started', { promptId: 'p1', kind: 'prompt' }),
      ev('S', 12, 'tool_call.started', {
        promptId: 'p1', toolCallId: 'tool-1', title: 'Run tests', kind: 'execute', status: 'pending', interrupted: false, rawInput: { command: ['go', 'test', './...'] },
      }),
      ev('S', 13, 'permission.requested', { promptId: 'p1', requestId: 'r1', toolCallId: 'tool-1', title: 'Run tests', options }),
    );
    await flush();
    await waitFor(() => expect(screen.getByTestId('permission-command').textContent).toBe('go test ./...'));
    expect(screen.queryByTestId('permission-diff')).toBeNull();
  });
});
