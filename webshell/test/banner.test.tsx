// The recovery banner: every state that must hide the Continue button and
// every state that must show it, by name; its text in English and Chinese;
// and the component wired to a controller (one click, one request).
import { cleanup, fireEvent, render, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import { LangContext, type Lang } from '../src/i18n';
import { bannerGate, type BannerModel } from '../src/state/banner';
import { SessionController } from '../src/state/session-controller';
import type { SessionViewState } from '../src/state/session-state';
import { RecoveryBanner } from '../src/components/RecoveryBanner';
import { ChatPane } from '../src/components/ChatPane';
import { clean, deferred, ev, evAction, FakeApi, flush, fold, interruptedTurn, loaded } from './fixtures';
import type { ContinueOutcome } from '../src/state/types';

afterEach(cleanup);

const SID = 's1';
const interrupted = () => loaded(SID, { recovery: interruptedTurn('p1') });

function renderBanner(model: BannerModel, lang: Lang = 'en', onContinue = () => {}) {
  return render(
    <LangContext.Provider value={lang}>
      <RecoveryBanner model={model} onContinue={onContinue} />
    </LangContext.Provider>,
  );
}

describe('banner hides the Continue button', () => {
  const cases: [string, () => SessionViewState, string][] = [
    ['while loading (no snapshot yet)', () => fold({ ...interrupted(), phase: 'loading' }), 'loading'],
    ['while disconnected (stream connecting after a drop)', () => fold(interrupted(), { type: 'connection', sessionId: SID, gen: 1, state: 'connecting' }), 'disconnected'],
    ['while the stream is closed', () => fold(interrupted(), { type: 'connection', sessionId: SID, gen: 1, state: 'closed' }), 'disconnected'],
    ['while catching up', () => fold(interrupted(), { type: 'connection', sessionId: SID, gen: 1, state: 'catching_up' }), 'catching_up'],
    [
      'while a turn is streaming',
      () => {
        const s = interrupted();
        return fold(s, evAction(s, ev(SID, 11, 'turn.started', { promptId: 'p2', kind: 'prompt' })));
      },
      'turn_active',
    ],
    ['while a turn is queued', () => {
      const s = interrupted();
      return fold(s, evAction(s, ev(SID, 11, 'turn.queued', { promptId: 'p2', kind: 'prompt' })));
    }, 'turn_active'],
    ['while the session state is RUNNING', () => {
      const s = interrupted();
      return fold(s, evAction(s, ev(SID, 11, 'session.state_changed', { state: 'RUNNING' })));
    }, 'turn_active'],
    ['while a prompt of this tab is being sent', () => fold(interrupted(), { type: 'prompt/sending', sessionId: SID, promptId: 'p9', text: 'hi' }), 'turn_active'],
    ['while a permission is pending', () => {
      const s = interrupted();
      return fold(s, evAction(s, ev(SID, 11, 'permission.requested', { requestId: 'r1', promptId: 'p1', options: [{ optionId: 'a', name: 'Allow', kind: 'allow_once' }] })));
    }, 'permission_pending'],
    ['when the session is read-only (closed)', () => {
      const s = interrupted();
      return fold(s, evAction(s, ev(SID, 11, 'session.closed', { state: 'COMPLETED' })));
    }, 'read_only'],
    ['when the session is terminal (FAILED)', () => {
      const s = interrupted();
      return fold(s, evAction(s, ev(SID, 11, 'session.state_changed', { state: 'FAILED' })));
    }, 'read_only'],
    ['when the session is terminal (CANCELLED)', () => {
      const s = interrupted();
      return fold(s, evAction(s, ev(SID, 11, 'session.state_changed', { state: 'CANCELLED' })));
    }, 'read_only'],
    ['when the recovery belongs to another session', () => {
      const s = interrupted();
      return { ...s, recovery: { ...s.recovery!, sessionId: 'other' } };
    }, 'other_session'],
    ['when the pane shows another session', () => interrupted(), 'other_session'],
    ['when the last turn is clean', () => loaded(SID, { recovery: clean() }), 'clean'],
    ['when there is no recovery summary yet', () => loaded(SID), 'no_recovery'],
    ['when a turn event is newer than the plan (stale plan)', () => {
      const s = interrupted();
      return fold(
        s,
        evAction(s, ev(SID, 11, 'turn.started', { promptId: 'p2', kind: 'prompt' })),
        evAction(s, ev(SID, 12, 'turn.completed', { promptId: 'p2', state: 'completed' })),
      );
    }, 'stale'],
  ];
  for (const [name, make, reason] of cases) {
    it(name, () => {
      const s = make();
      const shown = name === 'when the pane shows another session' ? 's2' : SID;
      const m = bannerGate(s, shown);
      expect(m.showContinue).toBe(false);
      expect(m.visible).toBe(false);
      expect(m.hidden).toBe(reason);
      renderBanner(m);
      expect(screen.queryByRole('button', { name: /continue/i })).toBeNull();
    });
  }

  it('for degraded_history: explanation only', () => {
    const m = bannerGate(loaded(SID, { recovery: { ...interruptedTurn('p1', 'degraded_history'), canContinue: false, reason: 'history_degraded' } }), SID);
    expect(m.visible).toBe(true);
    expect(m.showContinue).toBe(false);
    renderBanner(m);
    expect(screen.getByTestId('recovery-banner').dataset.kind).toBe('degraded_history');
    expect(screen.getByText(/history is missing/)).toBeTruthy();
    expect(screen.queryByRole('button')).toBeNull();
  });

  it('when the daemon says canContinue is false (agent unavailable)', () => {
    const m = bannerGate(loaded(SID, { recovery: { ...interruptedTurn('p1'), canContinue: false, reason: 'agent_unavailable' } }), SID);
    expect(m.visible).toBe(true);
    expect(m.showContinue).toBe(false);
    expect(m.cannotReason).toBe('agent_unavailable');
  });

  it('while the continuation request is in flight (sending)', () => {
    const s = fold(interrupted(), { type: 'continue/click', sessionId: SID, key: 'c1' });
    const m = bannerGate(s, SID);
    expect(m.showContinue).toBe(false);
    expect(m.progress).toBe('sending');
  });

  it('after an ambiguous failure (unknown), without retrying', () => {
    const s = fold(
      interrupted(),
      { type: 'continue/click', sessionId: SID, key: 'c1' },
      { type: 'continue/outcome', sessionId: SID, key: 'c1', outcome: { kind: 'unknown', error: new Error('net'), retrySafe: true }, errorText: 'network down' },
    );
    const m = bannerGate(s, SID);
    expect(m.visible).toBe(true);
    expect(m.showContinue).toBe(false);
    expect(m.progress).toBe('unknown');
    renderBanner(m);
    expect(screen.getByRole('alert').textContent).toContain('network down');
  });

  it('after a decline, until the refreshed recovery arrives', () => {
    const s = fold(
      interrupted(),
      { type: 'continue/click', sessionId: SID, key: 'c1' },
      { type: 'continue/outcome', sessionId: SID, key: 'c1', outcome: { kind: 'declined', reason: 'turn_active' } },
    );
    const m = bannerGate(s, SID);
    expect(m.showContinue).toBe(false);
    expect(m.progress).toBe('refreshing');
  });
});

describe('banner shows the Continue button', () => {
  it('for interrupted_turn, with the interrupted tool calls named', () => {
    const m = bannerGate(interrupted(), SID);
    expect(m).toMatchObject({ visible: true, kind: 'interrupted_turn', showContinue: true });
    renderBanner(m);
    expect(screen.getByRole('button', { name: 'Continue the interrupted turn' })).toBeTruthy();
    expect(screen.getByTestId('banner-tools').textContent).toContain('Run tests');
    expect(screen.getByText(/interrupted while working/)).toBeTruthy();
    expect(screen.getByText(/the daemon restarted/)).toBeTruthy();
  });

  it('for interrupted_prompt', () => {
    const m = bannerGate(loaded(SID, { recovery: { ...interruptedTurn('p1', 'interrupted_prompt'), danglingToolCalls: [] } }), SID);
    expect(m).toMatchObject({ visible: true, kind: 'interrupted_prompt', showContinue: true });
    renderBanner(m);
    expect(screen.getByText(/before the agent answered/)).toBeTruthy();
    expect(screen.queryByTestId('banner-tools')).toBeNull();
  });

  it('in Chinese', () => {
    renderBanner(bannerGate(interrupted(), SID), 'zh');
    expect(screen.getByRole('button', { name: '继续被中断的回合' })).toBeTruthy();
    expect(screen.getByText(/代理在处理你的上一条消息时被中断了/)).toBeTruthy();
    expect(screen.getByTestId('banner-tools').textContent).toContain('Run tests');
    expect(screen.getByText(/守护进程重启/)).toBeTruthy();
  });

  it('again after a decline once a fresh plan says it can continue', () => {
    const s = fold(
      interrupted(),
      { type: 'continue/click', sessionId: SID, key: 'c1' },
      { type: 'continue/outcome', sessionId: SID, key: 'c1', outcome: { kind: 'declined', reason: 'agent_starting' } },
      { type: 'context', sessionId: SID, context: { ...ctxOf(interruptedTurn('p1')), cursor: 'ep1:11' }, read: 99 },
    );
    const m = bannerGate(s, SID);
    expect(m.showContinue).toBe(true);
    expect(m.declinedReason).toBe('agent_starting');
  });

  it('again after a reload shows the continuation was never admitted', () => {
    let s = fold(
      interrupted(),
      { type: 'continue/click', sessionId: SID, key: 'c1' },
      { type: 'continue/outcome', sessionId: SID, key: 'c1', outcome: { kind: 'unknown', error: 'x', retrySafe: true } },
    );
    s = fold(s, { type: 'load/start', sessionId: SID, gen: 2 }, {
      type: 'load/snapshot', sessionId: SID, gen: 2,
      transcript: { sessionId: SID, eventEpoch: 'ep1', cursor: 'ep1:12', turns: [], messages: [], toolCalls: [], pendingPermissions: [] },
      context: ctxOf(interruptedTurn('p1'), 12), contextRead: 100,
    }, { type: 'connection', sessionId: SID, gen: 2, state: 'open' });
    const m = bannerGate(s, SID);
    expect(m.showContinue).toBe(true);
    // The same idempotency key is kept for the next click.
    expect(s.continuation.key).toBe('c1');
  });
});

function ctxOf(recovery: ReturnType<typeof interruptedTurn>, seq = 11) {
  return {
    sessionId: SID,
    taskId: 't1',
    cwd: '/w',
    state: 'WAITING_FOR_INPUT' as const,
    agent: { profileId: 'demo', available: true },
    recovery,
    eventEpoch: 'ep1',
    cursor: `ep1:${seq}`,
  };
}

describe('banner in a chat pane', () => {
  async function mount(api: FakeApi) {
    const c = new SessionController(api);
    c.start();
    await flush();
    api.stream.setState('catching_up');
    api.stream.setState('open');
    await flush();
    const r = render(
      <LangContext.Provider value="en">
        <ChatPane controller={c} shownSessionId={api.id} isMain active onFocus={() => {}} onStartNew={() => {}} onEndSession={() => {}} />
      </LangContext.Provider>,
    );
    return { c, ...r };
  }

  it('double click sends one continuation and hides the button at once', async () => {
    const api = new FakeApi(SID, { recovery: interruptedTurn('p1') });
    const pending = deferred<ContinueOutcome>();
    api.continueImpl = () => pending.promise;
    const { c } = await mount(api);
    const btn = await screen.findByRole('button', { name: 'Continue the interrupted turn' });
    fireEvent.click(btn);
    fireEvent.click(btn); // the element is still in the DOM for this event
    await c.continue(); // a keyboard activation racing the clicks
    expect(api.count('continue')).toBe(1);
    await flush();
    expect(screen.queryByRole('button', { name: 'Continue the interrupted turn' })).toBeNull();
    expect(screen.getByText('Continuing…')).toBeTruthy();
    // The admitted turn runs with the normal controls: Cancel is offered.
    const key = (api.calls.find((x) => x.name === 'continue')!.args[0] as { promptId: string }).promptId;
    pending.resolve({ kind: 'accepted', promptId: key, interruption: interruptedTurn('p1'), state: 'running' });
    api.stream.push(ev(SID, 11, 'turn.queued', { promptId: key, kind: 'continue', continuesPromptId: 'p1' }), ev(SID, 12, 'turn.started', { promptId: key, kind: 'continue' }));
    await flush();
    expect(screen.queryByTestId('recovery-banner')).toBeNull();
    expect(screen.getByRole('button', { name: /Cancel/ })).toBeTruthy();
    // No user message was added for the continuation.
    expect(screen.queryAllByTestId('user-message')).toHaveLength(0);
    expect(screen.queryAllByTestId('pending-message')).toHaveLength(0);
    expect(c.state.continuation).toMatchObject({ status: 'accepted', promptId: key });
  });

  it('a second tab that loses the race gets a decline and refreshes the recovery', async () => {
    const api = new FakeApi(SID, { recovery: interruptedTurn('p1') });
    api.continueImpl = () => Promise.resolve({ kind: 'declined', reason: 'turn_active', recovery: clean('turn_active') });
    const { c } = await mount(api);
    const before = api.count('context');
    api.contextImpl = () => Promise.resolve(ctxOf(clean('turn_active'), 13));
    fireEvent.click(await screen.findByRole('button', { name: 'Continue the interrupted turn' }));
    await flush();
    expect(api.count('continue')).toBe(1);
    expect(api.count('context')).toBe(before + 1);
    expect(c.state.recovery?.summary.kind).toBe('clean');
    expect(screen.queryByTestId('recovery-banner')).toBeNull();
  });
});

describe('banner shows the recovery report', () => {
  const withReport = (workspace?: NonNullable<ReturnType<typeof interruptedTurn>['report']>['workspace']) =>
    loaded(SID, {
      recovery: {
        ...interruptedTurn('p1'),
        report: {
          toolCalls: [
            { id: 'w', title: 'Write a.txt', kind: 'edit', status: 'completed', finished: true },
            { id: 'l', title: 'Run `ls`', kind: 'execute', status: 'completed', finished: true, output: 'a.txt' },
            { id: 's', title: 'Run `sleep 3600`', kind: 'execute', status: 'interrupted', finished: false },
          ],
          runningCommands: ['Run `sleep 3600`'],
          workspace,
        },
      },
    });
  const cases: { name: string; workspace?: Parameters<typeof withReport>[0]; files?: string; note?: RegExp }[] = [
    {
      name: 'files the turn changed, HEAD moved',
      workspace: { files: [{ path: 'a.txt', status: 'added' }, { path: 'src/main.go', status: 'modified' }], headMoved: true },
      files: 'Changed since this turn began: a.txt (added), src/main.go (modified)',
      note: /HEAD moved/,
    },
    { name: 'nothing changed', workspace: { files: [], headMoved: false }, files: 'No file changed in the workspace since this turn began.' },
    { name: 'not looked up yet', note: /Checking what changed/ },
    {
      name: 'executor could not tell',
      workspace: { files: [], headMoved: false, errorCode: 'executor_unavailable', error: 'the host is unreachable' },
      note: /not known \(the host is unreachable\)/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      renderBanner(bannerGate(withReport(c.workspace), SID));
      const report = screen.getByTestId('banner-report');
      if (c.files) expect(screen.getByTestId('banner-files').textContent).toBe(c.files);
      else expect(screen.queryByTestId('banner-files')).toBeNull();
      if (c.note) expect(report.textContent).toMatch(c.note);
      expect(screen.getByTestId('banner-finished').textContent).toBe('Finished before the interruption: Write a.txt, Run `ls`.');
      expect(screen.getByTestId('banner-running').textContent).toContain('Run `sleep 3600`');
    });
  }

  it('names at most ten files', () => {
    const files = Array.from({ length: 13 }, (_, i) => ({ path: `f${i}.txt`, status: 'added' as const }));
    renderBanner(bannerGate(withReport({ files, headMoved: false }), SID));
    const text = screen.getByTestId('banner-files').textContent ?? '';
    expect(text).toContain('f9.txt');
    expect(text).not.toContain('f10.txt');
    expect(text).toContain('and 3 more');
  });

  it('in Chinese', () => {
    renderBanner(bannerGate(withReport({ files: [{ path: 'a.txt', status: 'added' }], headMoved: false }), SID), 'zh');
    expect(screen.getByTestId('banner-files').textContent).toBe('自本回合开始以来的更改： a.txt (新增)');
  });
});
