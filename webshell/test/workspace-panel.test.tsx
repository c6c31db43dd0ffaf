// The workspace panel in a chat pane: enabled by the executor's readiness,
// never by the agent's (an agent that cannot resume still has its files,
// changes and terminal), a spinner with disabled tabs while the executor
// starts, why not when it is unavailable, and a turn's "Changes in this
// turn" showing that turn alone.
import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentsContext, ChatPane } from '../src/components/ChatPane';
import { WorkspaceApiContext } from '../src/components/WorkspacePanel';
import { LangContext } from '../src/i18n';
import { SessionController } from '../src/state/session-controller';
import type { GitDiff, SessionStatus, WorkspaceApi, WorkspaceFile, WorkspaceListing } from '../src/state/types';
import { FakeApi, flush, status } from './fixtures';

afterEach(() => {
  cleanup();
  localStorage.clear();
});

/** A fake workspace of one directory with a file and a subdirectory; records diffs asked for. */
class FakeWorkspace implements WorkspaceApi {
  diffs: Record<string, unknown>[] = [];
  workspace = {
    list: (path = ''): Promise<WorkspaceListing> =>
      Promise.resolve({
        path: path || '.',
        truncated: false,
        entries:
          path === ''
            ? [
                { path: 'src', name: 'src', type: 'dir' as const, size: 0, mode: 'drwxr-xr-x', modifiedAt: '2026-01-01T00:00:00Z' },
                { path: 'notes.txt', name: 'notes.txt', type: 'file' as const, size: 6, mode: '-rw-r--r--', modifiedAt: '2026-01-01T00:00:00Z' },
              ]
            : [],
      }),
    read: (path: string): Promise<WorkspaceFile> =>
      Promise.resolve({ path, size: 6, offset: 0, length: 6, binary: false, encoding: 'utf-8', content: 'hello\n', modifiedAt: '2026-01-01T00:00:00Z', truncated: false }),
    diff: (o: Record<string, unknown> = {}): Promise<GitDiff> => {
      this.diffs.push(o);
      // p2 ran a command that changed nothing.
      const none = o.turn === 'p2';
      return Promise.resolve({
        against: `turn:${String(o.turn)}`,
        base: 'b',
        tree: 't',
        files: none ? [] : [{ path: 'notes.txt', status: 'added', additions: 1, deletions: 0, binary: false }],
        patch: 'diff --git a/notes.txt b/notes.txt\nnew file mode 100644\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+hello\n',
        patchTruncated: false,
      });
    },
  };
  terminals = {
    open: () => Promise.resolve({ id: 'term-1', exited: false }),
    list: () => Promise.resolve({ terminals: [] }),
    close: () => Promise.resolve(undefined),
    attach: () => ({ end: 0, send: () => {}, resize: () => {}, close: () => {} }),
  };
}

async function mount(st: Partial<SessionStatus>, turns = false) {
  const api = new FakeApi('S', {
    transcript: turns
      ? {
          // p1 edited a file, p2 ran a command that changed nothing, p3
          // only read, p4 ran a command that wrote a file.
          turns: [
            { promptId: 'p1', kind: 'prompt', state: 'completed', createdAt: '2026-01-01T00:00:01Z', endedAt: '2026-01-01T00:00:02Z' },
            { promptId: 'p2', kind: 'prompt', state: 'completed', createdAt: '2026-01-01T00:00:03Z', endedAt: '2026-01-01T00:00:04Z' },
            { promptId: 'p3', kind: 'prompt', state: 'completed', createdAt: '2026-01-01T00:00:05Z', endedAt: '2026-01-01T00:00:06Z' },
            { promptId: 'p4', kind: 'prompt', state: 'completed', createdAt: '2026-01-01T00:00:07Z', endedAt: '2026-01-01T00:00:08Z' },
          ],
          toolCalls: [
            { id: 't1', promptId: 'p1', title: 'Write notes.txt', kind: 'edit', status: 'completed', interrupted: false, createdAt: '2026-01-01T00:00:01Z' },
            { id: 't1', promptId: 'p2', title: 'Run `ls`', kind: 'execute', status: 'completed', interrupted: false, createdAt: '2026-01-01T00:00:03Z' },
            { id: 't1', promptId: 'p3', title: 'Read notes.txt', kind: 'read', status: 'completed', interrupted: false, createdAt: '2026-01-01T00:00:05Z' },
            { id: 't1', promptId: 'p4', title: 'Run `make`', kind: 'execute', status: 'completed', interrupted: false, createdAt: '2026-01-01T00:00:07Z' },
          ],
        }
      : {},
  });
  api.statusImpl = () => Promise.resolve(status('S', st));
  const c = new SessionController(api);
  c.start();
  await flush();
  api.stream.setState('open');
  const ws = new FakeWorkspace();
  render(
    <LangContext.Provider value="en">
      <AgentsContext.Provider value={{}}>
        <WorkspaceApiContext.Provider value={() => ws}>
          <ChatPane controller={c} shownSessionId="S" isMain active onFocus={() => {}} onStartNew={() => {}} onEndSession={() => {}} />
        </WorkspaceApiContext.Provider>
      </AgentsContext.Provider>
    </LangContext.Provider>,
  );
  await flush();
  return { api, c, ws };
}

const panel = () => screen.getByTestId('workspace');
const tab = (k: string) => screen.getByTestId(`ws-tab-${k}`) as HTMLButtonElement;

describe('workspace panel', () => {
  it('works while the agent cannot resume: the files are listed and shown', async () => {
    await mount({ isAgentRunning: false, executorStatus: 'stopped', resumeReason: 'not_resumable', workspace: { status: 'ready' } });
    expect(screen.queryByTestId('workspace')).toBeNull();
    fireEvent.click(screen.getByTestId('workspace-toggle'));
    await flush();
    expect(panel().dataset.gate).toBe('ready');
    expect(tab('files').disabled).toBe(false);
    fireEvent.click(within(panel()).getByText('notes.txt'));
    await flush();
    expect(screen.getByTestId('ws-file-text').textContent).toBe('hello\n');
    // The panel stays open across a reload of the page (kept per session).
    expect(JSON.parse(localStorage.getItem('tether.workspace.S')!)).toEqual({ open: true, tab: 'files' });
  });

  it('a spinner with disabled tabs while the executor starts, then the files', async () => {
    const { api, c } = await mount({ executorStatus: 'starting', workspace: { status: 'starting', errorMessage: 'executor host "local" is not connected yet' } });
    fireEvent.click(screen.getByTestId('workspace-toggle'));
    await flush();
    expect(panel().dataset.gate).toBe('starting');
    expect(screen.getByTestId('ws-starting').textContent).toContain('not connected yet');
    expect(tab('terminal').disabled).toBe(true);
    expect(screen.queryByTestId('ws-files')).toBeNull();
    api.statusImpl = () => Promise.resolve(status('S', { workspace: { status: 'ready' } }));
    await c.refreshStatus();
    await flush();
    expect(panel().dataset.gate).toBe('ready');
    expect(within(panel()).getByText('notes.txt')).toBeTruthy();
  });

  it('unavailable: says why, Check again reads the status again', async () => {
    const { api } = await mount({ workspace: { status: 'unavailable', errorCode: 'executor_unavailable', errorMessage: 'the host is lost' } });
    fireEvent.click(screen.getByTestId('workspace-toggle'));
    await flush();
    expect(screen.getByTestId('ws-unavailable').textContent).toContain('the host is lost');
    const before = api.count('status');
    fireEvent.click(within(screen.getByTestId('ws-unavailable')).getByRole('button', { name: 'Check again' }));
    await flush();
    expect(api.count('status')).toBe(before + 1);
  });

  it('"Changes in this turn" only under the turns that changed files; a turn that only read is not even asked about', async () => {
    const { ws } = await mount({ workspace: { status: 'ready' } }, true);
    await flush();
    const linked = screen.getAllByTestId('turn-changes').map((b) => b.closest<HTMLElement>('[data-prompt-id]')!.dataset.promptId);
    expect(linked).toEqual(['p1', 'p4']);
    expect(ws.diffs.map((d) => d.turn).sort()).toEqual(['p1', 'p2', 'p4']);
    expect(ws.diffs.every((d) => d.patch === undefined)).toBe(true);
  });

  it("a turn's Changes link shows that turn alone: its checkpoint against the next turn's", async () => {
    const { ws } = await mount({ workspace: { status: 'ready' } }, true);
    await flush();
    const links = screen.getAllByTestId('turn-changes');
    expect(links).toHaveLength(2);
    fireEvent.click(links[0]!);
    await flush();
    expect(tab('changes').getAttribute('aria-selected')).toBe('true');
    expect(screen.getByTestId('ws-changes').dataset.scope).toBe('turn:p1');
    expect(ws.diffs.at(-1)).toEqual({ turn: 'p1', toTurn: 'p2', patch: true });
    expect(screen.getByTestId('ws-changed-file').dataset.path).toBe('notes.txt');
    // The diff is drawn by diff2html once its chunk has loaded.
    await waitFor(() => expect(screen.getByTestId('ws-patch').dataset.state).toBe('drawn'));
    expect(screen.getByTestId('ws-patch').querySelector('.d2h-ins .d2h-code-line-ctn')!.textContent).toBe('hello');
    // The last turn: until now.
    fireEvent.click(links[1]!);
    await flush();
    expect(ws.diffs.at(-1)).toEqual({ turn: 'p4', patch: true });
  });
});
