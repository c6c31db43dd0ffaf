// Tool calls: kind, status and content, with diffs rendered line by line.
import { cleanup, render, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolCallView } from '../src/components/ToolCallView';
import { LangContext } from '../src/i18n';
import { lineDiff } from '../src/lib/diff';

afterEach(cleanup);

describe('lineDiff', () => {
  it('marks removed and added lines between common context', () => {
    const d = lineDiff('a\nb\nc\nd\n', 'a\nB\nc\nd\ne\n');
    expect(d.map((l) => l.op + l.text)).toEqual([' a', '-b', '+B', ' c', ' d', '+e']);
    expect(d[2]).toMatchObject({ newNo: 2 });
    expect(d[5]).toMatchObject({ newNo: 5 });
  });

  it('treats a missing old text as a new file', () => {
    expect(lineDiff(null, 'x\ny').map((l) => l.op)).toEqual(['+', '+']);
  });
});

describe('ToolCallView', () => {
  it('shows kind, title, status and a readable diff', () => {
    render(
      <LangContext.Provider value="en">
        <ToolCallView
          call={{
            id: 't1',
            title: 'Edit main.go',
            kind: 'edit',
            status: 'completed',
            interrupted: false,
            locations: [{ path: '/w/main.go', line: 3 }],
            content: [{ type: 'diff', path: '/w/main.go', oldText: 'package main\nfunc a() {}\n', newText: 'package main\nfunc b() {}\n' }],
          }}
        />
      </LangContext.Provider>,
    );
    const tool = screen.getByTestId('tool-call');
    expect(tool.dataset.toolStatus).toBe('completed');
    expect(tool.textContent).toContain('edit');
    expect(tool.textContent).toContain('Edit main.go');
    expect(tool.textContent).toContain('Done');
    expect(tool.textContent).toContain('/w/main.go:3');
    const diff = screen.getByTestId('diff');
    expect(diff.textContent).toContain('+1');
    expect(diff.textContent).toContain('−1');
    expect(diff.querySelector('.diff__line--del')!.textContent).toContain('func a() {}');
    expect(diff.querySelector('.diff__line--add')!.textContent).toContain('func b() {}');
  });

  it('marks an interrupted tool call and shows its text result', () => {
    render(
      <LangContext.Provider value="en">
        <ToolCallView
          call={{
            id: 't2',
            title: 'Run tests',
            kind: 'execute',
            status: 'failed',
            interrupted: true,
            content: [{ type: 'content', content: { type: 'text', text: 'Tool execution result was not recorded' } }],
          }}
        />
      </LangContext.Provider>,
    );
    const tool = screen.getByTestId('tool-call');
    expect(tool.textContent).toContain('Failed');
    expect(tool.textContent).toContain('Interrupted');
    expect(tool.textContent).toContain('Tool execution result was not recorded');
  });
});
