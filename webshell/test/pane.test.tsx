// The chat pane around the banner: executor badge and composer states,
// resume and non-resumable agents, keyboard use, permission buttons.
import { cleanup, fireEvent, render, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ChatPane } from '../src/components/ChatPane';
import { LangContext } from '../src/i18n';
import { SessionController } from '../src/state/session-controller';
import type { SessionStatus } from '../src/state/types';
import { ev, FakeApi, flush, status } from './fixtures';

afterEach(cleanup);

async function mount(api: FakeApi, props: Partial<Parameters<typeof ChatPane>[0]> = {}) {
  const c = new SessionController(api);
  c.start();
  await flush();
  api.stream.setState('catching_up');
  api.stream.setState('open');
  await flush();
  const onStartNew = vi.fn();
  render(
    <LangContext.Provider value="en">
      <ChatPane controller={c} shownSessionId={api.id} isMain active onFocus={() => {}} onStartNew={onStartNew} onEndSession={() => {}} {...props} />
    </LangContext.Provider>,
  );
  await flush();
  return { c, onStartNew };
}

const withStatus = (api: FakeApi, over: Partial<SessionStatus>) => {
  api.statusImpl = () => Promise.resolve(status(api.id, over));
  return api;
};

describe('executor and composer', () => {
  it('starting: spinner badge and a composer that cannot send', async () => {
    await mount(withStatus(new FakeApi('S'), { executorStatus: 'starting', isAgentRunning: false, resumeReason: 'agent_starting' }));
    expect(screen.getByTestId('executor').dataset.exec).toBe('starting');
    const box = screen.getByRole('textbox', { name: 'Message' }) as HTMLTextAreaElement;
    expect(box.readOnly).toBe(true);
    expect(box.getAttribute('aria-disabled')).toBe('true');
    expect((screen.getByRole('button', { name: 'Send' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it('ready: the composer sends on Enter, not on Shift+Enter', async () => {
    const api = new FakeApi('S');
    await mount(api);
    expect(screen.getByTestId('executor').dataset.exec).toBe('ready');
    const box = screen.getByRole('textbox', { name: 'Message' });
    fireEvent.input(box, { target: { value: 'hello' } });
    fireEvent.keyDown(box, { key: 'Enter', shiftKey: true });
    expect(api.count('prompt')).toBe(0);
    fireEvent.keyDown(box, { key: 'Enter' });
    await flush();
    expect(api.count('prompt')).toBe(1);
    expect(api.calls.find((x) => x.name === 'prompt')!.args[0]).toEqual([{ type: 'text', text: 'hello' }]);
    // The prompt shows at once as a pending bubble until the daemon records it.
    expect(screen.getByTestId('pending-message').textContent).toContain('hello');
  });

  it('Esc cancels the running turn; the Cancel button does too', async () => {
    const api = new FakeApi('S');
    await mount(api);
    api.stream.push(ev('S', 11, 'turn.started', { promptId: 'p1', kind: 'prompt' }));
    await flush();
    fireEvent.keyDown(screen.getByRole('textbox', { name: 'Message' }), { key: 'Escape' });
    await flush();
    expect(api.count('cancel')).toBe(1);
    // Until the turn ends the button says so and cannot cancel twice.
    expect((screen.getByRole('button', { name: /Cancelling/ }) as HTMLButtonElement).disabled).toBe(true);
    api.stream.push(ev('S', 12, 'turn.cancelled', { promptId: 'p1', state: 'cancelled' }));
    await flush();
    expect(screen.queryByRole('button', { name: /Cancel/ })).toBeNull();
    expect(screen.getByTestId('turn-end').textContent).toContain('Turn cancelled');
    // The next turn: the Cancel button.
    api.stream.push(ev('S', 13, 'turn.started', { promptId: 'p2', kind: 'prompt' }));
    await flush();
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    await flush();
    expect(api.count('cancel')).toBe(2);
  });

  it('error: the message and a Retry that resumes the agent', async () => {
    const api = withStatus(new FakeApi('S'), { executorStatus: 'error', errorMessage: 'boom: agent failed', isAgentRunning: false });
    await mount(api);
    expect(screen.getByTestId('executor').dataset.exec).toBe('error');
    expect(screen.getByTestId('executor').innerHTML).toContain('boom: agent failed');
    fireEvent.click(screen.getByRole('button', { name: /Retry/ }));
    await flush();
    expect(api.count('resume')).toBe(1);
  });

  it('needs resume: a Resume button restores the agent', async () => {
    const api = withStatus(new FakeApi('S'), { executorStatus: 'stopped', needsResume: true, isAgentRunning: false, resumeReason: 'agent_not_running' });
    await mount(api);
    fireEvent.click(screen.getByRole('button', { name: 'Resume agent' }));
    await flush();
    expect(api.count('resume')).toBe(1);
  });

  it('not resumable: says so and offers a new session', async () => {
    const api = withStatus(new FakeApi('S'), { executorStatus: 'stopped', isResumable: false, needsResume: false, isAgentRunning: false, resumeReason: 'not_resumable' });
    const { onStartNew } = await mount(api);
    expect(screen.getByTestId('not-resumable').textContent).toContain('This agent cannot resume previous sessions — start a new session');
    fireEvent.click(screen.getByRole('button', { name: 'Start a new session' }));
    expect(onStartNew).toHaveBeenCalledWith({ agentProfileId: 'demo', cwd: '/w', taskId: 't1' });
  });

  it('a terminal session is read-only: no composer', async () => {
    const api = withStatus(new FakeApi('S'), { state: 'COMPLETED', resumeReason: 'session_terminal' });
    await mount(api);
    expect(screen.queryByRole('textbox', { name: 'Message' })).toBeNull();
    expect(screen.getByText(/read-only/)).toBeTruthy();
  });
});

describe('permissions and connection', () => {
  it('a pending permission offers the agent’s options as buttons', async () => {
    const api = new FakeApi('S');
    await mount(api);
    api.stream.push(
      ev('S', 11, 'turn.started', { promptId: 'p1', kind: 'prompt' }),
      ev('S', 12, 'permission.requested', {
        promptId: 'p1',
        requestId: 'r1',
        title: 'Edit demo.txt',
        options: [
          { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
          { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
        ],
      }),
    );
    await flush();
    const perm = screen.getByTestId('permission');
    expect(perm.textContent).toContain('Edit demo.txt');
    fireEvent.click(screen.getByRole('button', { name: 'Allow once' }));
    await flush();
    expect(api.calls.find((x) => x.name === 'answerPermission')!.args).toEqual(['r1', { optionId: 'allow_once' }]);
    expect((screen.getByRole('button', { name: 'Reject' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it('shows connected, catching up and disconnected', async () => {
    const api = new FakeApi('S');
    await mount(api);
    expect(screen.getByTestId('connection').dataset.conn).toBe('open');
    api.stream.setState('connecting');
    await flush();
    expect(screen.getByTestId('connection').dataset.conn).toBe('disconnected');
    api.stream.setState('catching_up');
    await flush();
    expect(screen.getByTestId('connection').dataset.conn).toBe('catching_up');
  });

  it('renders nothing of a controller for another session', async () => {
    const api = new FakeApi('S');
    await mount(api, { shownSessionId: 'T' });
    expect(screen.queryByTestId('pane')).toBeNull();
  });
});

describe('continuations in the timeline', () => {
  it('says which continuation tetherd made by itself (autoContinue)', async () => {
    const api = new FakeApi('S');
    await mount(api);
    api.stream.push(ev('S', 11, 'turn.started', { promptId: 'c1', kind: 'continue', continuesPromptId: 'p0' }));
    api.stream.push(ev('S', 12, 'session.auto_continued', { promptId: 'auto-continue:p1', continuesPromptId: 'p1', reason: 'agent_exited' }));
    api.stream.push(ev('S', 13, 'turn.started', { promptId: 'auto-continue:p1', kind: 'continue', continuesPromptId: 'p1' }));
    await flush();
    const dividers = screen.getAllByTestId('continued-divider');
    expect(dividers.map((d) => [d.textContent?.trim(), d.dataset.auto])).toEqual([
      ['Continued after an interruption', undefined],
      ['Continued automatically after the interruption (this session continues by itself after a crash)', 'true'],
    ]);
  });
});
