// The controller and the panes: what reaches the screen after the user
// moved on, ambiguous continuations, reconnects and resyncs.
import { describe, expect, it, vi } from 'vitest';
import { bannerGate } from '../src/state/banner';
import { PaneManager } from '../src/state/panes';
import { SessionController } from '../src/state/session-controller';
import type { ContinueOutcome, Transcript } from '../src/state/types';
import { clean, context, deferred, ev, FakeApi, flush, interruptedTurn, status, transcript } from './fixtures';

async function started(api: FakeApi, opts = {}) {
  const c = new SessionController(api, opts);
  c.start();
  await flush();
  api.stream.setState('catching_up');
  api.stream.setState('open');
  await flush();
  return c;
}

describe('switching sessions', () => {
  it('a late snapshot, event and continue outcome of the old session never change the pane', async () => {
    const apis: Record<string, FakeApi> = {};
    const slow = deferred<Transcript>();
    apis.A = new FakeApi('A', { recovery: interruptedTurn('pA') });
    apis.B = new FakeApi('B');
    const pendingContinue = deferred<ContinueOutcome>();
    apis.A.continueImpl = () => pendingContinue.promise;
    const panes = new PaneManager((id) => new SessionController(apis[id]!));
    const paneA = panes.show('A');
    await flush();
    apis.A.stream.setState('open');
    await flush();
    void paneA.controller.continue(); // request in flight
    apis.A.transcriptImpl = () => slow.promise;
    paneA.controller.reload(); // a reload in flight too
    const streamA = apis.A.stream;

    const paneB = panes.show('B', paneA.id);
    expect(panes.state.panes).toHaveLength(1);
    expect(panes.state.panes[0]!.sessionId).toBe('B');
    await flush();
    apis.B.stream.setState('open');
    await flush();
    const before = paneB.controller.state;

    // Everything A had in flight now lands.
    slow.resolve(transcript('A', 50, { messages: [{ id: 1, role: 'agent', text: 'A!', createdAt: '' }] }));
    pendingContinue.resolve({ kind: 'accepted', promptId: 'x', interruption: interruptedTurn('pA') });
    streamA.push(ev('A', 51, 'message.added', { messageId: 2, role: 'agent', text: 'late A' }));
    await flush();

    expect(paneA.controller.disposed).toBe(true);
    expect(streamA.closed).toBe(true);
    expect(paneB.controller.state).toBe(before);
    expect(panes.state.panes[0]!.controller).toBe(paneB.controller);
    expect(Object.values(paneB.controller.state.messages)).toHaveLength(0);
  });

  it('events on the new session stream after the switch still apply to it', async () => {
    const b = new FakeApi('B');
    const panes = new PaneManager((id) => new SessionController(id === 'B' ? b : new FakeApi(id)));
    panes.show('A');
    const pane = panes.show('B');
    await flush();
    b.stream.setState('open');
    b.stream.push(ev('B', 11, 'message.added', { messageId: 1, role: 'agent', text: 'B here' }));
    await flush();
    expect(pane.controller.state.messages[1]!.text).toBe('B here');
  });

  it('opening a second session beside keeps both panes independent', async () => {
    const panes = new PaneManager((id) => new SessionController(new FakeApi(id)));
    panes.show('A');
    panes.openBeside('B');
    expect(panes.state.panes.map((p) => p.sessionId)).toEqual(['A', 'B']);
    panes.close(panes.state.panes[1]!.id);
    expect(panes.state.panes.map((p) => p.sessionId)).toEqual(['A']);
  });
});

describe('continuation outcomes', () => {
  it('an unknown outcome is not retried automatically', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    try {
      const api = new FakeApi('S', { recovery: interruptedTurn('p1') });
      api.continueImpl = () => Promise.resolve({ kind: 'unknown', error: new Error('socket hang up'), retrySafe: true });
      const c = await started(api);
      expect(await c.continue()).toBe(true);
      await flush();
      expect(c.state.continuation.status).toBe('unknown');
      await vi.advanceTimersByTimeAsync(60_000);
      expect(api.count('continue')).toBe(1);
      expect(bannerGate(c.state, 'S')).toMatchObject({ visible: true, showContinue: false, progress: 'unknown' });
    } finally {
      vi.useRealTimers();
    }
  });

  it('a thrown network error counts as unknown; a reconnect reloads and reconciles it', async () => {
    const api = new FakeApi('S', { recovery: interruptedTurn('p1') });
    let key = '';
    api.continueImpl = (o) => {
      key = o!.promptId!;
      return Promise.reject(Object.assign(new Error('Failed to fetch'), { name: 'TetherNetworkError' }));
    };
    const c = await started(api);
    await c.continue();
    expect(c.state.continuation).toMatchObject({ status: 'unknown', key });
    // The daemon did admit it; after the restart the snapshot shows the turn.
    api.transcriptImpl = () =>
      Promise.resolve(
        transcript('S', 30, { turns: [{ promptId: key, kind: 'continue', state: 'running', createdAt: '2026-01-01T00:00:00Z', continuesPromptId: 'p1' }] }),
      );
    api.contextImpl = () => Promise.resolve(context('S', 30, clean('turn_active')));
    const transcriptsBefore = api.count('transcript');
    api.stream.setState('connecting'); // dropped
    api.stream.setState('catching_up');
    api.stream.setState('open'); // back
    await flush();
    expect(api.count('transcript')).toBe(transcriptsBefore + 1);
    expect(c.state.continuation).toMatchObject({ status: 'accepted', promptId: key });
    expect(api.count('continue')).toBe(1);
  });

  it('a definite 4xx refusal is a decline, not an ambiguous failure', async () => {
    const api = new FakeApi('S', { recovery: interruptedTurn('p1') });
    api.continueImpl = () => Promise.reject(Object.assign(new Error('bad'), { status: 400, code: 'invalid_request' }));
    const c = await started(api);
    await c.continue();
    await flush();
    expect(c.state.continuation.status).not.toBe('unknown');
    expect(api.count('context')).toBeGreaterThanOrEqual(2);
  });

  it('the continuation sends its idempotency key and reuses it after a reload', async () => {
    const api = new FakeApi('S', { recovery: interruptedTurn('p1') });
    api.continueImpl = () => Promise.resolve({ kind: 'unknown', error: 'timeout', retrySafe: true });
    const c = await started(api);
    await c.continue();
    const first = (api.calls.find((x) => x.name === 'continue')!.args[0] as { promptId: string }).promptId;
    c.reload();
    await flush();
    api.stream.setState('open');
    await flush();
    expect(bannerGate(c.state, 'S').showContinue).toBe(true);
    await c.continue();
    const second = (api.calls.filter((x) => x.name === 'continue')[1]!.args[0] as { promptId: string }).promptId;
    expect(second).toBe(first);
  });
});

describe('stream handling', () => {
  it('starts the stream from the snapshot cursor', async () => {
    const api = new FakeApi('S', { seq: 42 });
    await started(api);
    expect(api.calls.find((x) => x.name === 'events')!.args[0]).toBe('ep1:42');
  });

  it('resync_required reloads the snapshot and reconnects from its cursor', async () => {
    const api = new FakeApi('S', { seq: 10 });
    const c = await started(api);
    api.transcriptImpl = () => Promise.resolve({ ...transcript('S', 3), eventEpoch: 'ep2', cursor: 'ep2:3' });
    api.contextImpl = () => Promise.resolve({ ...context('S', 3, clean()), eventEpoch: 'ep2', cursor: 'ep2:3' });
    api.stream.push({ type: 'resync_required', data: { reason: 'epoch_mismatch', epoch: 'ep2', cursor: 'ep2:3' } } as never);
    await flush();
    expect(api.count('transcript')).toBe(2);
    expect(api.streams).toHaveLength(2);
    expect(api.streams[0]!.closed).toBe(true);
    expect(api.calls.filter((x) => x.name === 'events')[1]!.args[0]).toBe('ep2:3');
    expect(c.state.epoch).toBe('ep2');
  });

  it('a reconnect refreshes status and the recovery plan', async () => {
    const api = new FakeApi('S');
    await started(api);
    const ctx = api.count('context');
    api.stream.setState('connecting');
    api.stream.setState('catching_up');
    api.stream.setState('open');
    await flush();
    await new Promise((r) => setTimeout(r, 20));
    expect(api.count('context')).toBe(ctx + 1);
    expect(api.count('status')).toBeGreaterThanOrEqual(2);
  });

  it('a failed load is retried until the daemon answers', async () => {
    const api = new FakeApi('S');
    let fail = true;
    const ok = api.transcriptImpl;
    api.transcriptImpl = () => (fail ? Promise.reject(new Error('connection refused')) : ok());
    const c = new SessionController(api, { retryMs: 5 });
    c.start();
    await flush();
    expect(c.state.phase).toBe('error');
    fail = false;
    await new Promise((r) => setTimeout(r, 30));
    await flush();
    expect(c.state.phase).toBe('ready');
    c.dispose();
  });

  it('401 asks the app for a new token', async () => {
    const api = new FakeApi('S');
    api.transcriptImpl = () => Promise.reject(Object.assign(new Error('unauthorized'), { status: 401 }));
    const onUnauthorized = vi.fn();
    const c = new SessionController(api, { onUnauthorized });
    c.start();
    await flush();
    expect(onUnauthorized).toHaveBeenCalled();
  });

  it('auto-resume restores an agent that needs it when the setting is on', async () => {
    const api = new FakeApi('S');
    api.statusImpl = () => Promise.resolve({ ...status('S'), needsResume: true, isAgentRunning: false, executorStatus: 'stopped', resumeReason: 'agent_not_running' });
    await started(api, { autoResume: () => true });
    expect(api.count('resume')).toBe(1);
    const api2 = new FakeApi('T');
    api2.statusImpl = api.statusImpl;
    await started(api2, { autoResume: () => false });
    expect(api2.count('resume')).toBe(0);
  });
});

describe('hidden tabs', () => {
  it('a hidden tab gives its stream back and reloads from a fresh snapshot when shown', async () => {
    const api = new FakeApi('S');
    const c = await started(api);
    c.setVisible(false, 5);
    await new Promise((r) => setTimeout(r, 20));
    expect(api.stream.closed).toBe(true);
    const loads = api.count('transcript');
    c.setVisible(true);
    await flush();
    expect(api.count('transcript')).toBe(loads + 1);
    expect(api.streams).toHaveLength(2);
    expect(api.stream.closed).toBe(false);
  });

  it('a tab shown again quickly keeps its stream', async () => {
    const api = new FakeApi('S');
    const c = await started(api);
    c.setVisible(false, 50);
    c.setVisible(true);
    await new Promise((r) => setTimeout(r, 80));
    expect(api.streams).toHaveLength(1);
    expect(api.stream.closed).toBe(false);
  });
});
