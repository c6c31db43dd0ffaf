// The New-session dialog as a new user meets it: the agents that can run
// first and the others folded with why, the directories of earlier
// sessions, the path checked as typed and the daemon's refusal of it said
// under the field, the worktree switch and the first message; it opens at
// its top.
import { cleanup, fireEvent, render, screen, within } from '@testing-library/preact';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NewSessionDialog, cwdCheck, recentDirectories, type NewSessionRequest } from '../src/components/NewSessionDialog';
import { LangContext } from '../src/i18n';
import type { AgentProfile } from '../src/state/types';
import { flush } from './fixtures';

afterEach(cleanup);

const agent = (id: string, available: boolean): AgentProfile => ({
  id,
  displayName: `Agent ${id}`,
  source: 'config',
  available,
  nativeSessionResume: true,
  historyContextInjection: true,
  ...(available ? {} : { unavailableReason: `${id} not found on PATH` }),
});

function open(opts: { recentDirs?: string[]; defaultCwd?: string; onCreate?: (r: NewSessionRequest) => Promise<void> } = {}) {
  const onCreate = vi.fn(opts.onCreate ?? (() => Promise.resolve()));
  render(
    <LangContext.Provider value="en">
      <NewSessionDialog agents={[agent('claude', false), agent('demo', true), agent('qwen', false)]} tasks={[]} defaultCwd={opts.defaultCwd} recentDirs={opts.recentDirs} onCreate={onCreate} onClose={() => {}} />
    </LangContext.Provider>,
  );
  return { onCreate, dialog: screen.getByRole('dialog', { name: 'New session' }) };
}

const cwdBox = () => screen.getByRole('textbox', { name: 'Working directory' }) as HTMLInputElement;
const type = (el: HTMLElement, value: string) => fireEvent.input(el, { target: { value } });

describe('recentDirectories', () => {
  it('newest first, each once, at most five', () => {
    const s = (cwd: string, day: number) => ({ cwd, createdAt: `2026-01-0${day}T00:00:00Z` });
    expect(recentDirectories([s('/a', 1), s('/b', 3), s('/a', 4), s('/c', 2)])).toEqual(['/a', '/b', '/c']);
    expect(recentDirectories([1, 2, 3, 4, 5, 6, 7].map((d) => s(`/d${d}`, d)))).toEqual(['/d7', '/d6', '/d5', '/d4', '/d3']);
  });
});

describe('cwdCheck', () => {
  it('a relative path or ~ is refused as typed; a system directory is warned about; a project path is fine', () => {
    expect(cwdCheck('project')).toBe('relative');
    expect(cwdCheck('~/project')).toBe('relative');
    expect(cwdCheck('/etc/')).toBe('system');
    expect(cwdCheck('/proc/1')).toBe('system');
    expect(cwdCheck('/home/me/project')).toBeUndefined();
    expect(cwdCheck('/etcetera')).toBeUndefined();
  });
});

describe('the New-session dialog', () => {
  it('lists the available agent first and folds the unavailable ones, with why', () => {
    const { dialog } = open();
    const options = [...dialog.querySelectorAll<HTMLElement>('[data-testid=agent-option]')].map((o) => o.dataset.agentId);
    expect(options).toEqual(['demo', 'claude', 'qwen']);
    const fold = screen.getByTestId('agents-unavailable') as HTMLDetailsElement;
    expect(fold.open).toBe(false);
    expect(fold.querySelector('summary')!.textContent).toBe('Unavailable here (2)');
    expect(within(fold).getByText(/Unavailable: claude not found on PATH/)).toBeTruthy();
    expect((screen.getByRole('radio', { name: /Agent demo/ }) as HTMLInputElement).checked).toBe(true);
  });

  it('offers the recent directories and fills the newest; a click picks another', () => {
    open({ recentDirs: ['/w/new', '/w/old'] });
    expect(cwdBox().value).toBe('/w/new');
    expect(screen.getByTestId('cwd-check').textContent).toBe('An earlier session worked here.');
    fireEvent.click(within(screen.getByTestId('recent-dirs')).getByRole('button', { name: '/w/old' }));
    expect(cwdBox().value).toBe('/w/old');
  });

  it('checks the path as it is typed: a relative one cannot be submitted', () => {
    open();
    type(cwdBox(), 'project');
    expect(screen.getByTestId('cwd-check').dataset.check).toBe('relative');
    expect(cwdBox().getAttribute('aria-invalid')).toBe('true');
    expect((screen.getByRole('button', { name: 'Start session' }) as HTMLButtonElement).disabled).toBe(true);
    type(cwdBox(), '/home/me/project');
    expect(screen.getByTestId('cwd-check').dataset.check).toBe('ok');
    expect((screen.getByRole('button', { name: 'Start session' }) as HTMLButtonElement).disabled).toBe(false);
  });

  it("says the daemon's refusal of the directory under the field, until the path changes", async () => {
    const refusal = Object.assign(new Error('x'), { status: 400, code: 'invalid_cwd', detail: 'cwd /nope: no such directory' });
    const { onCreate } = open({ onCreate: () => Promise.reject(refusal) });
    type(cwdBox(), '/nope');
    fireEvent.click(screen.getByRole('button', { name: 'Start session' }));
    await flush();
    expect(onCreate).toHaveBeenCalledTimes(1);
    expect(screen.getByTestId('cwd-check').textContent).toBe('cwd /nope: no such directory');
    expect(cwdBox().getAttribute('aria-invalid')).toBe('true');
    expect(screen.queryByTestId('create-error')).toBeNull();
    type(cwdBox(), '/nope2');
    expect(screen.getByTestId('cwd-check').dataset.check).toBe('ok');
  });

  it('sends the worktree switch and the first message', async () => {
    const { onCreate } = open({ defaultCwd: '/w' });
    fireEvent.click(screen.getByRole('checkbox', { name: /git worktree/ }));
    type(screen.getByRole('textbox', { name: 'First message (optional)' }), 'fix the build');
    fireEvent.click(screen.getByRole('button', { name: 'Start session' }));
    await flush();
    expect(onCreate.mock.calls[0]![0]).toMatchObject({ agentProfileId: 'demo', cwd: '/w', worktree: true, prompt: 'fix the build' });
  });

  it('focuses the first message when the directory is known, the directory when it is not', () => {
    open({ defaultCwd: '/w' });
    expect(document.activeElement).toBe(screen.getByRole('textbox', { name: 'First message (optional)' }));
    cleanup();
    open();
    expect(document.activeElement).toBe(cwdBox());
  });
});
