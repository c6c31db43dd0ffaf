// Where the agent runs and the executor's status in the session reducer:
// the runtime and host come from the session and from executor_status
// events and survive reports that leave them out; `reconnecting` keeps the
// turn going (no error, no notice, no banner, no resume offer).
import { describe, expect, it } from 'vitest';
import { bannerGate } from '../src/state/banner';
import { activeTurn, isTurnBusy } from '../src/state/selectors';
import { placeOf, type ExecutorPlace } from '../src/state/executor';
import type { SessionViewState } from '../src/state/session-state';
import type { Executor } from '../src/state/types';
import { ev, evAction, fold, loaded, status } from './fixtures';

const SID = 's1';

/** A loaded, connected session whose executor row is `executor`. */
function hostedSession(executor: Executor): SessionViewState {
  return loaded(SID, { st: { runtime: executor.runtime, executorStatus: executor.status }, session: { executor } });
}

describe('placeOf', () => {
  const cases: { name: string; prev: ExecutorPlace; runtime?: string; host?: string; want: ExecutorPlace }[] = [
    { name: 'a report without a runtime keeps the place', prev: { runtime: 'remote', host: 'gpu' }, want: { runtime: 'remote', host: 'gpu' } },
    { name: 'a report of the same runtime without a host keeps the host', prev: { runtime: 'detached', host: 'local' }, runtime: 'detached', want: { runtime: 'detached', host: 'local' } },
    { name: 'a report naming the host replaces it', prev: { runtime: 'remote', host: 'gpu' }, runtime: 'remote', host: 'gpu-2', want: { runtime: 'remote', host: 'gpu-2' } },
    { name: 'another runtime without a host drops the old host', prev: { runtime: 'detached', host: 'local' }, runtime: 'standalone', want: { runtime: 'standalone' } },
    { name: 'nothing known and nothing reported stays empty', prev: {}, want: {} },
    { name: 'the first report is taken', prev: {}, runtime: 'remote', host: 'gpu', want: { runtime: 'remote', host: 'gpu' } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(placeOf(c.prev, c.runtime, c.host)).toEqual(c.want);
    });
  }
});

describe('executor runtime and host', () => {
  it('the snapshot takes runtime and host from the session', () => {
    const s = hostedSession({ runtime: 'remote', host: 'gpu-box', status: 'ready' });
    expect(s.executor).toEqual({ status: 'ready', runtime: 'remote', host: 'gpu-box' });
  });

  it('executor_status events carry them; an event or status read without them keeps them', () => {
    let s = hostedSession({ runtime: 'detached', host: 'local', status: 'starting' });
    s = fold(s, evAction(s, ev(SID, 11, 'session.executor_status', { status: 'ready', runtime: 'detached', host: 'local', pid: 7 })));
    expect(s.executor).toEqual({ status: 'ready', runtime: 'detached', host: 'local' });
    // An older daemon's event names neither.
    s = fold(s, evAction(s, ev(SID, 12, 'session.executor_status', { status: 'stopped' })));
    expect(s.executor).toEqual({ status: 'stopped', runtime: 'detached', host: 'local' });
    // GET /status names the runtime only.
    s = fold(s, { type: 'status', sessionId: SID, status: status(SID, { runtime: 'detached', executorStatus: 'ready' }) });
    expect(s.executor).toEqual({ status: 'ready', runtime: 'detached', host: 'local' });
  });

  it('an event names the executor of a session loaded without one', () => {
    let s = hostedSession({ runtime: 'standalone', status: 'stopped' });
    expect(s.executor.host).toBeUndefined();
    s = fold(s, evAction(s, ev(SID, 11, 'session.executor_status', { status: 'starting', runtime: 'remote', host: 'gpu-box' })));
    expect(s.executor).toEqual({ status: 'starting', runtime: 'remote', host: 'gpu-box' });
  });

  it('an error keeps the place with its code', () => {
    let s = hostedSession({ runtime: 'remote', host: 'gpu-box', status: 'starting' });
    s = fold(s, evAction(s, ev(SID, 11, 'session.executor_status', { status: 'error', error: 'no creds', errorCode: 'agent_auth_required', runtime: 'remote', host: 'gpu-box' })));
    expect(s.executor).toEqual({ status: 'error', error: 'no creds', code: 'agent_auth_required', runtime: 'remote', host: 'gpu-box' });
  });
});

describe('reconnecting', () => {
  it('a turn goes on while the executor reconnects: not an error, no notice, no banner', () => {
    let s = hostedSession({ runtime: 'detached', host: 'local', status: 'ready' });
    s = fold(
      s,
      evAction(s, ev(SID, 11, 'turn.started', { promptId: 'p1', kind: 'prompt' })),
      evAction(s, ev(SID, 12, 'message.chunk', { promptId: 'p1', messageId: 2, role: 'agent', text: 'chunk 1\n' })),
      evAction(s, ev(SID, 13, 'session.executor_status', { status: 'reconnecting', runtime: 'detached', host: 'local' })),
    );
    expect(s.executor).toEqual({ status: 'reconnecting', runtime: 'detached', host: 'local' });
    expect(s.notice).toBeUndefined();
    expect(activeTurn(s)?.promptId).toBe('p1');
    expect(isTurnBusy(s)).toBe(true);
    expect(bannerGate(s, SID).visible).toBe(false);
    // The status read while it reconnects says the same.
    s = fold(s, { type: 'status', sessionId: SID, status: status(SID, { runtime: 'detached', executorStatus: 'reconnecting', state: 'RUNNING' }) });
    expect(s.executor).toEqual({ status: 'reconnecting', runtime: 'detached', host: 'local' });
    // Back: the chunks the host kept arrive and the turn completes.
    s = fold(
      s,
      evAction(s, ev(SID, 14, 'session.executor_status', { status: 'ready', runtime: 'detached', host: 'local' })),
      evAction(s, ev(SID, 15, 'message.chunk', { promptId: 'p1', messageId: 2, role: 'agent', text: 'chunk 2\n' })),
      evAction(s, ev(SID, 16, 'turn.completed', { promptId: 'p1', state: 'completed', stopReason: 'end_turn' })),
    );
    expect(s.executor.status).toBe('ready');
    expect(s.turns.p1!.state).toBe('completed');
    expect(s.messages[2]!.text).toBe('chunk 1\nchunk 2\n');
    expect(bannerGate(s, SID).visible).toBe(false);
  });

  it('reconnecting ends a resume in flight like ready does (the daemon attaches by itself)', () => {
    let s = hostedSession({ runtime: 'remote', host: 'gpu-box', status: 'stopped' });
    s = fold(s, { type: 'resume/start', sessionId: SID });
    expect(s.resuming).toBe(true);
    s = fold(s, evAction(s, ev(SID, 11, 'session.executor_status', { status: 'reconnecting', runtime: 'remote', host: 'gpu-box' })));
    expect(s.resuming).toBe(false);
    expect(s.executor.status).toBe('reconnecting');
  });
});
