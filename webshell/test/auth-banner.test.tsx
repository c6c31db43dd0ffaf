// The banner of an agent that needs credentials (agent_auth_required):
// shown from the status, the executor event and a refused resume, with the
// daemon's message, the agent's auth methods and their hints; never for
// other failures, and gone once the agent runs.
import { cleanup, fireEvent, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentProfile, SessionStatus } from '../src/state/types';
import { ev, FakeApi, flush, status } from './fixtures';
import { mountPane } from './mount-pane';

afterEach(cleanup);

const HINT = 'set OPENAI_API_KEY in the profile\'s env';
const MESSAGE = `agent needs credentials: ${HINT} (OpenAI key)`;
const authStatus: Partial<SessionStatus> = {
  executorStatus: 'error',
  isAgentRunning: false,
  needsResume: true,
  isResumable: true,
  resumeReason: 'agent_not_started',
  errorCode: 'agent_auth_required',
  errorMessage: MESSAGE,
};

const profile = {
  id: 'demo',
  displayName: 'Locked agent',
  available: true,
  capabilities: { authMethods: [{ id: 'openai', name: 'OpenAI key', type: 'env_var', vars: ['OPENAI_API_KEY'], hint: HINT }] },
} as unknown as AgentProfile;

const mount = mountPane;

describe('agent_auth_required banner', () => {
  it('from the status: the message, the methods of the agent profile, the hint; no generic resume offer', async () => {
    const api = new FakeApi('S');
    api.statusImpl = () => Promise.resolve(status('S', authStatus));
    await mount(api, { demo: profile });
    const b = screen.getByTestId('auth-banner');
    expect(b.getAttribute('role')).toBe('alert');
    expect(b.textContent).toContain('The agent needs credentials before it can work');
    expect(screen.getByTestId('auth-message').textContent).toBe(MESSAGE);
    const methods = screen.getByTestId('auth-methods');
    expect(methods.querySelector('[data-method-id=openai]')?.textContent).toContain('OpenAI key');
    expect(methods.textContent).toContain(HINT);
    expect(b.textContent).toContain('profile “demo” in agents.yaml');
    expect(screen.queryByTestId('needs-resume')).toBeNull();

    // Try again resumes; the agent still refuses (the problem names the
    // methods): the banner stays, and no generic error notice repeats it.
    api.resume = () => {
      api.calls.push({ name: 'resume', args: [] });
      return Promise.reject(
        Object.assign(new Error('problem'), {
          status: 502,
          code: 'agent_auth_required',
          detail: MESSAGE,
          body: { code: 'agent_auth_required', detail: MESSAGE, authMethods: [{ id: 'login', name: 'Log in', hint: 'run `agent login` once in a terminal' }] },
        }),
      );
    };
    fireEvent.click(screen.getByTestId('auth-retry'));
    await flush();
    expect(api.count('resume')).toBe(1);
    expect(screen.getByTestId('auth-methods').textContent).toContain('run `agent login` once in a terminal');
    expect(document.querySelector('.notice--error')).toBeNull();
  });

  it('from the executor event, and gone once the agent is ready', async () => {
    const api = new FakeApi('S');
    await mount(api);
    expect(screen.queryByTestId('auth-banner')).toBeNull();
    api.stream.push(ev('S', 11, 'session.executor_status', { status: 'error', error: MESSAGE, errorCode: 'agent_auth_required' }));
    await flush();
    expect(screen.getByTestId('auth-message').textContent).toBe(MESSAGE);
    api.stream.push(ev('S', 12, 'session.executor_status', { status: 'ready' }));
    await flush();
    expect(screen.queryByTestId('auth-banner')).toBeNull();
  });

  it('not for other start failures', async () => {
    const api = new FakeApi('S');
    api.statusImpl = () => Promise.resolve(status('S', { ...authStatus, errorCode: 'agent_start_failed', errorMessage: 'exec format error' }));
    await mount(api, { demo: profile });
    expect(screen.queryByTestId('auth-banner')).toBeNull();
    expect(screen.getByTestId('executor').dataset.exec).toBe('error');
  });
});
