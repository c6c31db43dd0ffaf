// The executor in the UI: the pane's badge says where the agent runs and
// shows `reconnecting` as a wait (amber, spinning, a tooltip saying the turn
// goes on), never as an error or a stop; the new-session form offers
// standalone, detached and the remote hosts, and sends nothing unless the
// user picks one.
import { cleanup, fireEvent, render, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NewSessionDialog, type NewSessionRequest } from '../src/components/NewSessionDialog';
import { LangContext } from '../src/i18n';
import type { AgentProfile, ExecutorHost, Session, SessionStatus } from '../src/state/types';
import { ev, FakeApi, flush, session, status } from './fixtures';
import { mountPane } from './mount-pane';

afterEach(cleanup);

/** A FakeApi whose session runs in `executor` and whose status says `st`. */
function hostedApi(executor: Session['executor'], st: Partial<SessionStatus> = {}): FakeApi {
  const api = new FakeApi('S');
  api.get = () => Promise.resolve(session('S', { executor }));
  api.statusImpl = () => Promise.resolve(status('S', { runtime: executor?.runtime ?? 'standalone', executorStatus: executor?.status ?? 'ready', ...st }));
  return api;
}

const badge = () => screen.getByTestId('executor');
const stateBadge = () => badge().querySelector('.badge')! as HTMLElement;

describe('executor badge', () => {
  it('names the runtime of a detached session', async () => {
    await mountPane(hostedApi({ runtime: 'detached', host: 'local', status: 'ready' }));
    expect(badge().dataset.exec).toBe('ready');
    expect(badge().dataset.runtime).toBe('detached');
    const where = screen.getByTestId('executor-where');
    expect(where.textContent).toBe('detached');
    expect(where.getAttribute('title')).toContain('outlives tetherd restarts');
  });

  it('names the host of a remote session', async () => {
    await mountPane(hostedApi({ runtime: 'remote', host: 'gpu-box', status: 'ready' }));
    expect(badge().dataset.host).toBe('gpu-box');
    expect(screen.getByTestId('executor-where').textContent).toBe('remote gpu-box');
  });

  it('reconnecting: amber with a spinner and a tooltip, no Retry, no resume offer, the composer stays', async () => {
    const api = hostedApi({ runtime: 'remote', host: 'gpu-box', status: 'reconnecting' }, { needsResume: true, isAgentRunning: false, resumeReason: 'agent_not_running' });
    await mountPane(api);
    expect(badge().dataset.exec).toBe('reconnecting');
    expect(stateBadge().className).toContain('badge--warn');
    expect(stateBadge().className).not.toContain('badge--bad');
    expect(stateBadge().querySelector('.spinner')).not.toBeNull();
    expect(stateBadge().textContent).toBe('Reconnecting to host');
    expect(stateBadge().getAttribute('title')).toBe(
      'tetherd lost its connection to the executor host gpu-box and is reconnecting. The agent keeps running there and the turn goes on; nothing is lost.',
    );
    expect(screen.queryByRole('button', { name: /Retry/ })).toBeNull();
    expect(screen.queryByTestId('needs-resume')).toBeNull();
    expect(screen.queryByTestId('recovery-banner')).toBeNull();
    expect((screen.getByRole('textbox', { name: 'Message' }) as HTMLTextAreaElement).readOnly).toBe(false);
    // The host is back: ready again.
    api.stream.push(ev('S', 11, 'session.executor_status', { status: 'ready', runtime: 'remote', host: 'gpu-box' }));
    await flush();
    expect(badge().dataset.exec).toBe('ready');
    expect(stateBadge().getAttribute('title')).toBeFalsy();
  });

  it('starting or reconnecting on a host it cannot reach yet: the tooltip says why, as a wait', async () => {
    const why = 'executor host "gpu-box" is not connected: connect: dial tcp 10.0.0.2:7788: connection refused';
    const api = hostedApi(
      { runtime: 'remote', host: 'gpu-box', status: 'starting', errorMessage: why },
      { errorMessage: why, errorCode: 'executor_unavailable' },
    );
    await mountPane(api);
    expect(badge().dataset.exec).toBe('starting');
    expect(stateBadge().className).not.toContain('badge--bad');
    expect(stateBadge().querySelector('.spinner')).not.toBeNull();
    expect(stateBadge().getAttribute('title')).toBe(`Waiting for the executor host gpu-box, which tetherd cannot reach yet: ${why}`);
    expect(screen.queryByRole('button', { name: /Retry/ })).toBeNull();
    // Later the link breaks and the host refuses the token: both said.
    const refused = 'executor host "gpu-box" is not connected: handshake: host refused the daemon: wrong token';
    api.stream.push(ev('S', 11, 'session.executor_status', { status: 'reconnecting', runtime: 'remote', host: 'gpu-box', error: refused, errorCode: 'executor_unavailable' }));
    await flush();
    expect(stateBadge().getAttribute('title')).toBe(
      'tetherd lost its connection to the executor host gpu-box and is reconnecting. The agent keeps running there and the turn goes on; nothing is lost.\n' +
        `Waiting for the executor host gpu-box, which tetherd cannot reach yet: ${refused}`,
    );
  });

  it('a detached session reconnecting names the local host', async () => {
    const api = hostedApi({ runtime: 'detached', host: 'local', status: 'ready' });
    await mountPane(api);
    api.stream.push(ev('S', 11, 'turn.started', { promptId: 'p1', kind: 'prompt' }), ev('S', 12, 'session.executor_status', { status: 'reconnecting', runtime: 'detached', host: 'local' }));
    await flush();
    expect(badge().dataset.exec).toBe('reconnecting');
    expect(stateBadge().getAttribute('title')).toContain('the local executor host');
    // The running turn can still be cancelled.
    expect(screen.getByRole('button', { name: 'Cancel' })).toBeTruthy();
  });
});

const demo: AgentProfile = { id: 'demo', displayName: 'Demo agent', available: true } as AgentProfile;
const hosts: ExecutorHost[] = [
  { name: 'local', runtime: 'detached', state: 'connected', sessions: [] },
  { name: 'gpu-box', runtime: 'remote', state: 'connected', sessions: [] },
  { name: 'far', runtime: 'remote', state: 'lost', sessions: [] },
];

function renderDialog(onCreate: (r: NewSessionRequest) => Promise<void>) {
  render(
    <LangContext.Provider value="en">
      <NewSessionDialog agents={[demo]} hosts={hosts} tasks={[]} defaultCwd="/w" onCreate={onCreate} onClose={() => {}} />
    </LangContext.Provider>,
  );
  return screen.getByRole('combobox', { name: /^Runs on/ }) as HTMLSelectElement;
}

describe('new-session executor picker', () => {
  it('offers the default, standalone, detached and the remote hosts (not the local host twice)', () => {
    const select = renderDialog(() => Promise.resolve());
    const options = [...select.options].map((o) => [o.value, o.textContent]);
    expect(options).toEqual([
      ['', 'Daemon default'],
      ['standalone', 'Standalone (child of tetherd)'],
      ['detached', 'Detached (local host, survives restarts)'],
      ['gpu-box', 'gpu-box (remote)'],
      ['far', 'far (remote, unreachable)'],
    ]);
    expect(select.value).toBe('');
  });

  it('sends no executor unless the user picks one', async () => {
    const onCreate = vi.fn((_r: NewSessionRequest) => Promise.resolve());
    renderDialog(onCreate);
    fireEvent.click(screen.getByRole('button', { name: 'Start session' }));
    await flush();
    expect(onCreate).toHaveBeenCalledTimes(1);
    expect(onCreate.mock.calls[0]![0].executor).toBeUndefined();
  });

  it('sends the picked executor', async () => {
    const onCreate = vi.fn((_r: NewSessionRequest) => Promise.resolve());
    const select = renderDialog(onCreate);
    fireEvent.change(select, { target: { value: 'gpu-box' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start session' }));
    await flush();
    expect(onCreate.mock.calls[0]![0]).toMatchObject({ agentProfileId: 'demo', cwd: '/w', executor: 'gpu-box' });
  });
});
