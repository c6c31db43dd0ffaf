// The inbox's view (its button, the list, answering in place, the
// notification toggle) and the notifications: which events make one, and
// that only the leading tab shows them while the page is hidden.
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LangContext, type Lang } from '../src/i18n';
import { InboxButton, InboxDialog, type NotifyControls } from '../src/components/Inbox';
import { AgentsContext } from '../src/components/ChatPane';
import { inboxReducer, initialInboxState, type InboxState } from '../src/state/inbox-state';
import { InboxNotifier, noticeFor, type Notice, type NotifyEnv } from '../src/state/inbox-notify';
import type { AgentProfile, InboxItem, TetherEvent } from '../src/state/types';
import { budgetItem, cur, permissionItem, session, stalledItem, turnItem } from './fixtures';

afterEach(cleanup);

const credentialsItem = (): InboxItem => ({
  id: 'needs_credentials:s5',
  kind: 'needs_credentials',
  at: '2026-01-01T00:00:01Z',
  session: session('s5abcdef-0000', { agentProfileId: 'claude', executor: { runtime: 'standalone', status: 'error', errorCode: 'agent_auth_required', errorMessage: 'Run claude /login first' } }),
});

function stateOf(items: InboxItem[], over: Partial<InboxState> = {}): InboxState {
  return { ...inboxReducer(initialInboxState(), { type: 'list', list: { items, cursor: cur(9) } }), ...over };
}

function fakeNotify(perm: NotificationPermission | 'unsupported' = 'default', answer: NotificationPermission = 'granted') {
  let chosen = false;
  let p = perm;
  const n: NotifyControls & { asked: number } = {
    asked: 0,
    permission: () => p,
    chosen: () => chosen,
    enable: async () => {
      n.asked++;
      p = answer;
      chosen = answer === 'granted';
      return answer;
    },
    disable: () => (chosen = false),
  };
  return n;
}

const agents = { claude: { id: 'claude', displayName: 'Claude Code' } as AgentProfile };

function renderDialog(state: InboxState, over: Partial<Parameters<typeof InboxDialog>[0]> = {}, lang: Lang = 'en') {
  const calls = { answer: [] as [string, string][], cont: [] as string[], cancel: [] as string[], raise: [] as string[], open: [] as string[], closed: 0 };
  const notify = over.notify ?? fakeNotify();
  render(
    <LangContext.Provider value={lang}>
      <AgentsContext.Provider value={agents}>
        <InboxDialog
          state={state}
          notify={notify}
          onAnswer={(i, o) => calls.answer.push([i.id, o])}
          onContinue={(i) => calls.cont.push(i.id)}
          onCancel={(i) => calls.cancel.push(i.id)}
          onRaiseBudget={(id) => calls.raise.push(id)}
          onOpen={(id) => calls.open.push(id)}
          onClose={() => calls.closed++}
          {...over}
        />
      </AgentsContext.Provider>
    </LangContext.Provider>,
  );
  return calls;
}

describe('inbox button', () => {
  it('names the count, for readers too', () => {
    const { rerender } = render(<InboxButton state={stateOf([permissionItem(), turnItem('failed_turn'), credentialsItem()])} expanded={false} onClick={() => {}} testId="inbox-button" />);
    const b = screen.getByRole('button', { name: 'Inbox, 3 waiting' });
    expect(screen.getByTestId('inbox-count').textContent).toBe('3');
    expect(b.getAttribute('aria-expanded')).toBe('false');
    rerender(<InboxButton state={stateOf([])} expanded={false} onClick={() => {}} testId="inbox-button" />);
    screen.getByRole('button', { name: 'Inbox, nothing waiting' });
    expect(screen.queryByTestId('inbox-count')).toBeNull();
    rerender(
      <LangContext.Provider value="zh">
        <InboxButton state={stateOf([permissionItem()], { more: true })} expanded onClick={() => {}} testId="inbox-button" />
      </LangContext.Provider>,
    );
    screen.getByRole('button', { name: '收件箱，1+ 项待处理' });
  });
});

describe('inbox dialog', () => {
  it('shows each kind: the session, what waits and what can be done', () => {
    const items = [permissionItem(), turnItem('interrupted_turn', 's2'), turnItem('failed_turn', 's3'), credentialsItem()];
    renderDialog(stateOf(items));
    screen.getByRole('dialog', { name: 'Inbox' });
    const rows = screen.getAllByTestId('inbox-item');
    expect(rows.map((r) => r.dataset.kind)).toEqual(['permission', 'interrupted_turn', 'failed_turn', 'needs_credentials']);
    const [perm, intr, failed, creds] = rows;
    expect(perm!.getAttribute('aria-label')).toBe('Permission: Session s1');
    expect(perm!.textContent).toContain('Edit demo.txt');
    expect(perm!.querySelector('time')).not.toBeNull();
    // "Allow once" is the primary answer, not "Allow always" (listed first).
    const primary = perm!.querySelector('[data-primary=true]')!;
    expect(primary.textContent).toBe('Allow once');
    expect(primary.className).toContain('btn--primary');
    expect(intr!.textContent).toContain('The turn was interrupted (the agent process exited).');
    expect(intr!.querySelector('[data-testid=inbox-continue]')!.getAttribute('aria-label')).toBe('Continue the interrupted turn of Session s2');
    expect(failed!.textContent).toContain('The turn failed: model overloaded');
    expect(failed!.querySelector('[data-testid=inbox-continue]')).toBeNull();
    // Untitled: the agent's name and a short id.
    expect(creds!.getAttribute('aria-label')).toMatch(/^Needs credentials: Claude Code · /);
    expect(creds!.textContent).toContain('The agent needs credentials: Run claude /login first');
    for (const r of rows) expect(r.querySelector('[data-testid=inbox-open]')).not.toBeNull();
  });

  it('answers, continues and opens in place', () => {
    const calls = renderDialog(stateOf([permissionItem(), turnItem('interrupted_turn', 's2')]));
    fireEvent.click(screen.getByRole('button', { name: 'Allow once' }));
    fireEvent.click(screen.getByRole('button', { name: 'Continue the interrupted turn of Session s2' }));
    fireEvent.click(screen.getByRole('button', { name: 'Open Session s2' }));
    expect(calls.answer).toEqual([['permission:s1:r1', 'once']]);
    expect(calls.cont).toEqual(['interrupted_turn:s2:p1']);
    expect(calls.open).toEqual(['s2']);
    expect(calls.closed).toBe(1); // opening a session closes the inbox
  });

  it('disables an item while its answer is on its way, and says why one failed', () => {
    const item = permissionItem();
    renderDialog(stateOf([item], { busy: { [item.id]: true } }));
    for (const b of screen.getAllByTestId('inbox-option')) expect((b as HTMLButtonElement).disabled).toBe(true);
    cleanup();
    renderDialog(stateOf([item], { failed: { [item.id]: 'the store is down' } }));
    expect(screen.getByRole('alert').textContent).toBe('Could not do it: the store is down');
  });

  it("a turn a budget stopped: its message, Raise budget (opens the session's editor) and Continue", () => {
    const calls = renderDialog(stateOf([budgetItem('s6')]));
    const row = screen.getByTestId('inbox-item');
    expect(row.getAttribute('aria-label')).toBe('Budget reached: Session s6');
    expect(screen.getByTestId('inbox-what').textContent).toBe('Budget reached: the session used 1080 tokens of its budget of 1000. Raise the budget, then continue.');
    fireEvent.click(screen.getByRole('button', { name: 'Raise budget for Session s6' }));
    expect(calls.raise).toEqual(['s6']);
    expect(calls.closed).toBe(1); // the session shows, with its editor
    fireEvent.click(screen.getByRole('button', { name: 'Continue the stopped turn of Session s6' }));
    expect(calls.cont).toEqual(['budget_exceeded:s6:p1']);
  });

  it('a continuation refused while over the budget says so under the item', () => {
    const item = budgetItem('s6');
    renderDialog(stateOf([item], { failed: { [item.id]: 'budget_exceeded' } }));
    expect(screen.getByRole('alert').textContent).toBe('Could not do it: the session is still over its budget; raise it, then continue');
    cleanup();
    renderDialog(stateOf([item], { failed: { [item.id]: 'budget_exceeded' } }), {}, 'zh');
    expect(screen.getByRole('alert').textContent).toBe('未能完成：会话仍超出预算；请先提高预算，再继续');
  });

  it('a stalled turn: how long its agent has been silent, and a neutral Cancel turn', () => {
    // Stalled 4 minutes ago after 60 s of silence: silent for 5 minutes.
    const item = stalledItem('s7', new Date(Date.now() - 4 * 60_000).toISOString(), { stallSeconds: 60 });
    const calls = renderDialog(stateOf([item]));
    expect(screen.getByTestId('inbox-what').textContent).toBe('No output from the agent for 5 min');
    const cancel = screen.getByRole('button', { name: 'Cancel turn of Session s7' });
    expect(cancel.textContent).toBe('Cancel turn');
    expect(cancel.className).not.toContain('btn--primary');
    expect(screen.queryByTestId('inbox-continue')).toBeNull();
    fireEvent.click(cancel);
    expect(calls.cancel).toEqual([item.id]);
    cleanup();
    renderDialog(stateOf([stalledItem('s7', new Date(Date.now() - 10_000).toISOString(), { stallSeconds: 20 })]), {}, 'zh');
    expect(screen.getByTestId('inbox-what').textContent).toMatch(/^代理已3\d秒没有任何输出$/);
    screen.getByRole('button', { name: '取消回合：Session s7' });
  });

  it('says when nothing waits, and closes with Esc', () => {
    const calls = renderDialog(stateOf([]));
    expect(screen.getByTestId('inbox-empty').textContent).toMatch(/^Nothing waits for you/);
    fireEvent.keyDown(screen.getByRole('dialog'), { key: 'Escape' });
    expect(calls.closed).toBe(1);
  });

  it('speaks Chinese', () => {
    renderDialog(stateOf([turnItem('failed_turn', 's3')]), {}, 'zh');
    screen.getByRole('dialog', { name: '收件箱' });
    expect(screen.getByTestId('inbox-item').textContent).toContain('回合失败：model overloaded');
    screen.getByRole('button', { name: '打开 Session s3' });
    screen.getByRole('checkbox', { name: '标签页隐藏时通知我' });
  });

  it('turns notifications on after the browser grants them', async () => {
    const notify = fakeNotify('default', 'granted');
    renderDialog(stateOf([]), { notify });
    const box = screen.getByRole('checkbox', { name: 'Notify me when the tab is hidden' }) as HTMLInputElement;
    expect(box.checked).toBe(false);
    fireEvent.click(box);
    await waitFor(() => expect(box.checked).toBe(true));
    expect(notify.asked).toBe(1);
    expect(notify.chosen()).toBe(true);
    fireEvent.click(box);
    await waitFor(() => expect(box.checked).toBe(false));
    expect(notify.chosen()).toBe(false);
  });

  it('says when the browser refuses, or cannot', async () => {
    renderDialog(stateOf([]), { notify: fakeNotify('default', 'denied') });
    const box = screen.getByRole('checkbox') as HTMLInputElement;
    fireEvent.click(box);
    await waitFor(() => expect(screen.getByText(/blocks notifications/)).toBeTruthy());
    expect(box.checked).toBe(false);
    cleanup();
    renderDialog(stateOf([]), { notify: fakeNotify('unsupported') });
    expect((screen.getByRole('checkbox') as HTMLInputElement).disabled).toBe(true);
    screen.getByText('This browser cannot show notifications here.');
  });
});

const gev = (type: string, data: Record<string, unknown> = {}) => ({ type, id: cur(3), data: { sessionId: 's1', ...data } }) as unknown as TetherEvent;
const name = (id: string) => `Session ${id}`;

describe('notifications', () => {
  it('a permission request, the end of a turn and a stalled turn make one; the rest do not', () => {
    expect(noticeFor(gev('permission.requested', { requestId: 'r1', title: 'Edit demo.txt', options: [] }), name, 'en')).toEqual({
      title: 'Session s1 asks for permission',
      body: 'Edit demo.txt',
      tag: 'permission:s1:r1',
      sessionId: 's1',
    });
    expect(noticeFor(gev('turn.completed', { state: 'completed' }), name, 'en')).toMatchObject({ title: 'Session s1: the turn is done', tag: 'turn:s1' });
    expect(noticeFor(gev('turn.failed', { code: 'x', message: 'model overloaded' }), name, 'en')).toMatchObject({ title: 'Session s1: the turn failed', body: 'model overloaded', tag: 'turn:s1' });
    expect(noticeFor(gev('turn.cancelled', {}), name, 'en')).toMatchObject({ title: 'Session s1: the turn was cancelled' });
    expect(noticeFor(gev('turn.interrupted', { reason: 'agent_exited' }), name, 'en')).toMatchObject({ body: 'the agent process exited' });
    expect(noticeFor(gev('turn.stalled', {}), name, 'zh')).toMatchObject({ title: 'Session s1：回合似乎卡住了', tag: 'turn:s1' });
    expect(noticeFor(gev('turn.stalled', { since: '2026-01-01T00:00:00Z', stalledAt: '2026-01-01T00:02:00Z', seconds: 120 }), name, 'en')).toMatchObject({
      title: 'Session s1: the turn seems stuck',
      body: 'No output from the agent for 2 min',
    });
    // A budget stopped the turn: said so, by budget.exceeded and by the turn's end alike (one tag).
    const budget = { title: 'Session s1: budget reached, the turn was stopped', body: 'the session used 1080 tokens of its budget of 1000', tag: 'turn:s1', sessionId: 's1' };
    expect(noticeFor(gev('budget.exceeded', { limit: 'tokens', message: budget.body, budget: { maxTokens: 1000 }, usage: {} }), name, 'en')).toEqual(budget);
    expect(noticeFor(gev('turn.cancelled', { reason: 'budget_exceeded', message: budget.body }), name, 'en')).toEqual(budget);
    expect(noticeFor(gev('budget.exceeded', { message: 'x' }), name, 'zh')).toMatchObject({ title: 'Session s1：已达预算，回合已停止' });
    expect(noticeFor(gev('turn.cancelled', { reason: 'withdrawn' }), name, 'en')).toBeUndefined();
    expect(noticeFor(gev('turn.started'), name, 'en')).toBeUndefined();
    expect(noticeFor(gev('permission.resolved', { requestId: 'r1', state: 'selected' }), name, 'en')).toBeUndefined();
    expect(noticeFor({ type: 'turn.completed', data: {} } as unknown as TetherEvent, name, 'en')).toBeUndefined();
  });

  function setup(over: Partial<{ enabled: boolean; permission: NotificationPermission; hidden: boolean; leads: boolean }> = {}) {
    const o = { enabled: true, permission: 'granted' as NotificationPermission, hidden: true, leads: true, ...over };
    const shown: { n: Notice; click: () => void }[] = [];
    const opened: string[] = [];
    let listener: ((ev: TetherEvent) => void) | undefined;
    const env: NotifyEnv = { enabled: () => o.enabled, permission: () => o.permission, hidden: () => o.hidden, show: (n, click) => shown.push({ n, click }) };
    const feed = { onEvent: (l: (ev: TetherEvent) => void) => ((listener = l), () => (listener = undefined)), leads: () => o.leads };
    const stop = new InboxNotifier(feed, env, (ev) => noticeFor(ev, name, 'en'), (id) => opened.push(id)).start();
    return { o, shown, opened, emit: (ev: TetherEvent) => listener?.(ev), stop };
  }

  it('shows one while the page is hidden; a click opens the session', () => {
    const x = setup();
    x.emit(gev('permission.requested', { requestId: 'r1', title: 'Edit demo.txt', options: [] }));
    expect(x.shown.map((s) => s.n.tag)).toEqual(['permission:s1:r1']);
    x.shown[0]!.click();
    expect(x.opened).toEqual(['s1']);
    x.stop();
    x.emit(gev('turn.completed'));
    expect(x.shown).toHaveLength(1);
  });

  it('stays quiet when off, not granted, seen, or another tab leads', () => {
    for (const over of [{ enabled: false }, { permission: 'denied' as const }, { permission: 'default' as const }, { hidden: false }, { leads: false }]) {
      const x = setup(over);
      x.emit(gev('permission.requested', { requestId: 'r1', options: [] }));
      x.emit(gev('turn.failed', { code: 'x', message: 'y' }));
      expect(x.shown, JSON.stringify(over)).toEqual([]);
    }
  });

  it('the browser side keeps the choice in localStorage and shows a tagged Notification', async () => {
    const made: { title: string; opts: NotificationOptions; onclick?: () => void; closed?: boolean }[] = [];
    class FakeNotification {
      static permission: NotificationPermission = 'default';
      static requestPermission = vi.fn(async () => ((FakeNotification.permission = 'granted'), 'granted' as const));
      onclick: (() => void) | null = null;
      constructor(title: string, opts: NotificationOptions) {
        made.push(Object.assign(this, { title, opts }) as never);
      }
      close() {
        (this as unknown as { closed: boolean }).closed = true;
      }
    }
    vi.stubGlobal('Notification', FakeNotification);
    const { enableNotify, notifyChosen, browserNotifyEnv, chooseNotify } = await import('../src/lib/notify');
    localStorage.clear();
    expect(notifyChosen()).toBe(false);
    expect(await enableNotify()).toBe('granted');
    expect(notifyChosen()).toBe(true);
    expect(localStorage.getItem('tether.notify')).toBe('true');
    const env = browserNotifyEnv();
    expect(env.permission()).toBe('granted');
    const focus = vi.spyOn(window, 'focus').mockImplementation(() => {});
    let clicked = 0;
    env.show({ title: 'T', body: 'B', tag: 'turn:s1', sessionId: 's1' }, () => clicked++);
    expect(made).toHaveLength(1);
    expect(made[0]!.opts).toEqual({ body: 'B', tag: 'turn:s1' });
    made[0]!.onclick!();
    expect(clicked).toBe(1);
    expect(focus).toHaveBeenCalled();
    expect(made[0]!.closed).toBe(true);
    chooseNotify(false);
    expect(notifyChosen()).toBe(false);
    vi.unstubAllGlobals();
  });
});
