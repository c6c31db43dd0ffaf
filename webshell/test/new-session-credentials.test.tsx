// The New-session dialog and an agent that needs credentials: before the
// user creates the session it says what the daemon last saw (GET /agents
// `credentials`: the agent asked at its start, or at a prompt) with the
// hints; a refusal (409 agent_auth_required) keeps the dialog open with the
// daemon's message and the methods; an agent seen to work shows nothing.
import { cleanup, fireEvent, render, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NewSessionDialog, type NewSessionRequest } from '../src/components/NewSessionDialog';
import { LangContext } from '../src/i18n';
import type { AgentProfile } from '../src/state/types';
import { flush } from './fixtures';

afterEach(cleanup);

const HINT = "set OPENAI_API_KEY in the profile's env";
const openai = { id: 'openai', name: 'Use OpenAI API key', hint: HINT };
const MESSAGE = `session/new failed: Missing API key. The agent needs credentials: ${HINT}`;

function agent(id: string, credentials?: AgentProfile['credentials']): AgentProfile {
  return { id, displayName: `Agent ${id}`, source: 'config', available: true, nativeSessionResume: true, historyContextInjection: true, ...(credentials ? { credentials } : {}) };
}

const required = (stage: 'start' | 'prompt'): AgentProfile['credentials'] => ({ status: 'required', stage, message: MESSAGE, authMethods: [openai], observedAt: '2026-12-06T00:00:00Z' });

function renderDialog(agents: AgentProfile[], onCreate: (r: NewSessionRequest) => Promise<void> = () => Promise.resolve()) {
  render(
    <LangContext.Provider value="en">
      <NewSessionDialog agents={agents} tasks={[]} defaultCwd="/w" onCreate={onCreate} onClose={() => {}} />
    </LangContext.Provider>,
  );
}

const option = (id: string) => document.querySelector(`[data-testid=agent-option][data-agent-id="${id}"]`) as HTMLElement;

describe('new-session dialog: credentials', () => {
  it('says before creating that the chosen agent asked for credentials at its start, with the message and the hints', () => {
    renderDialog([agent('qwen', required('start')), agent('demo')]);
    expect(option('qwen').querySelector('[data-testid=agent-needs-credentials]')?.textContent).toContain('needs credentials');
    expect(option('demo').querySelector('[data-testid=agent-needs-credentials]')).toBeNull();
    const notice = screen.getByTestId('agent-credentials');
    expect(notice.textContent).toContain('asked for credentials the last time it started');
    expect(screen.getByTestId('agent-credentials-message').textContent).toBe(MESSAGE);
    expect(notice.querySelector('[data-method-id=openai]')?.textContent).toContain(HINT);
  });

  it('says that the last prompt asked, for an agent that asks only at a prompt', () => {
    renderDialog([agent('claude', required('prompt'))]);
    expect(screen.getByTestId('agent-credentials').textContent).toContain('last prompt asked for credentials');
  });

  it('shows nothing for an agent seen to work, or never seen', () => {
    renderDialog([agent('ok', { status: 'ok', stage: 'start', observedAt: '2026-12-06T00:00:00Z' }), agent('new')]);
    expect(screen.queryByTestId('agent-credentials')).toBeNull();
    fireEvent.click(option('new').querySelector('input')!);
    expect(screen.queryByTestId('agent-credentials')).toBeNull();
  });

  it('follows the choice of agent', () => {
    renderDialog([agent('demo'), agent('qwen', required('start'))]);
    expect(screen.queryByTestId('agent-credentials')).toBeNull();
    fireEvent.click(option('qwen').querySelector('input')!);
    expect(screen.getByTestId('agent-credentials')).toBeTruthy();
  });

  it('keeps the dialog open on a refusal, with the daemon message and the methods', async () => {
    const refusal = Object.assign(new Error('conflict'), {
      status: 409,
      code: 'agent_auth_required',
      detail: `session not created: ${MESSAGE}`,
      body: { code: 'agent_auth_required', detail: `session not created: ${MESSAGE}`, authMethods: [openai] },
    });
    const onCreate = vi.fn((_r: NewSessionRequest) => Promise.reject(refusal));
    renderDialog([agent('qwen', required('start'))], onCreate);
    fireEvent.click(screen.getByRole('button', { name: 'Start session' }));
    await flush();
    expect(onCreate).toHaveBeenCalledTimes(1);
    const error = screen.getByTestId('create-error');
    expect(error.getAttribute('role')).toBe('alert');
    expect(error.textContent).toContain(`session not created: ${MESSAGE}`);
    expect(error.querySelector('[data-method-id=openai]')?.textContent).toContain(HINT);
    expect((screen.getByRole('button', { name: 'Start session' }) as HTMLButtonElement).disabled).toBe(false);
  });

  it('lists no methods for another failure', async () => {
    const onCreate = vi.fn((_r: NewSessionRequest) => Promise.reject(Object.assign(new Error('x'), { status: 400, code: 'executor_not_found', detail: 'no executor host gpu-box' })));
    renderDialog([agent('demo')], onCreate);
    fireEvent.click(screen.getByRole('button', { name: 'Start session' }));
    await flush();
    expect(screen.getByTestId('create-error').textContent).toBe('no executor host gpu-box');
  });
});
