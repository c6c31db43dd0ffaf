// The inbox's state: GET /inbox read at start, again (debounced) when the
// global stream says it may have changed or comes back; answers and
// continuations take their item out at once, and a read that began before
// them does not bring it back.
import { describe, expect, it } from 'vitest';
import { InboxController, inboxCount, inboxReducer, initialInboxState, type InboxApi } from '../src/state/inbox-state';
import { TasksController, tasksReducer, initialTasksState, type TasksApi } from '../src/state/tasks-state';
import type { ContinueOutcome, InboxItem, InboxList, StreamState, TetherEvent } from '../src/state/types';
import { FakeStream, budgetItem, cur, deferred, flush, permissionItem, session, stalledItem, turnItem, type Deferred } from './fixtures';

const gev = (n: number, type: string, data: Record<string, unknown> = {}) => ({ type, id: cur(n), data: { sessionId: 's1', ...data } }) as unknown as TetherEvent;

const list = (items: InboxItem[], seq: number, more = false): InboxList => ({ items, cursor: cur(seq), ...(more ? { nextPageToken: 'n' } : {}) });

/** An InboxApi whose reads the test answers one by one. */
class FakeInboxApi implements InboxApi {
  reads: Deferred<InboxList>[] = [];
  answers: [string, string, string][] = [];
  continues: string[] = [];
  cancels: string[] = [];
  cancelImpl: () => Promise<unknown> = () => Promise.resolve({ cancelled: true });
  answerImpl: () => Promise<unknown> = () => Promise.resolve({});
  continueImpl: () => Promise<ContinueOutcome> = () => Promise.resolve({ kind: 'accepted', promptId: 'p2', interruption: { kind: 'interrupted_turn', canContinue: true, danglingToolCalls: [], notice: '' } });
  listInbox(p: { limit?: number }): Promise<InboxList> {
    expect(p.limit).toBe(200);
    const d = deferred<InboxList>();
    this.reads.push(d);
    return d.promise;
  }
  answerPermission(sessionId: string, requestId: string, optionId: string): Promise<unknown> {
    this.answers.push([sessionId, requestId, optionId]);
    return this.answerImpl();
  }
  continueTurn(sessionId: string): Promise<ContinueOutcome> {
    this.continues.push(sessionId);
    return this.continueImpl();
  }
  cancelTurn(sessionId: string): Promise<unknown> {
    this.cancels.push(sessionId);
    return this.cancelImpl();
  }
}

/** A GlobalFeed the test drives. */
function fakeFeed() {
  const events = new Set<(ev: TetherEvent) => void>();
  const states = new Set<(s: StreamState, p: StreamState) => void>();
  return {
    onEvent: (l: (ev: TetherEvent) => void) => (events.add(l), () => events.delete(l)),
    onConnection: (l: (s: StreamState, p: StreamState) => void) => (states.add(l), () => states.delete(l)),
    emit: (ev: TetherEvent) => events.forEach((l) => l(ev)),
    state: (s: StreamState, p: StreamState) => states.forEach((l) => l(s, p)),
    listeners: () => events.size + states.size,
  };
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('inbox reducer', () => {
  it('keeps the newest snapshot: a list older than the one shown is dropped', () => {
    let s = inboxReducer(initialInboxState(), { type: 'list', list: list([permissionItem()], 5) });
    expect(s.loaded).toBe(true);
    expect(s.items.map((i) => i.id)).toEqual(['permission:s1:r1']);
    s = inboxReducer(s, { type: 'list', list: list([], 4) });
    expect(s.items).toHaveLength(1);
    s = inboxReducer(s, { type: 'list', list: list([], 6) });
    expect(s.items).toHaveLength(0);
    // Another epoch (the log was reset) is taken.
    s = inboxReducer(s, { type: 'list', list: { items: [permissionItem()], cursor: cur(1, 'ep2') } });
    expect(s.items).toHaveLength(1);
  });

  it('an item dealt with stays out until a list without it arrives', () => {
    let s = inboxReducer(initialInboxState(), { type: 'list', list: list([permissionItem(), turnItem('failed_turn')], 5) });
    s = inboxReducer(s, { type: 'busy', id: 'permission:s1:r1' });
    expect(s.busy['permission:s1:r1']).toBe(true);
    s = inboxReducer(s, { type: 'done', id: 'permission:s1:r1' });
    expect(s.items.map((i) => i.kind)).toEqual(['failed_turn']);
    expect(s.busy).toEqual({});
    // A read that began before the answer still lists it: not shown.
    s = inboxReducer(s, { type: 'list', list: list([permissionItem(), turnItem('failed_turn')], 6) });
    expect(s.items.map((i) => i.kind)).toEqual(['failed_turn']);
    // The daemon took it out: forgotten, so a new request of the same id would show.
    s = inboxReducer(s, { type: 'list', list: list([turnItem('failed_turn')], 7) });
    expect(s.hidden).toEqual({});
  });

  it('counts the first page, and says when there is more', () => {
    const s = inboxReducer(initialInboxState(), { type: 'list', list: list([permissionItem(), turnItem('failed_turn')], 5, true) });
    expect(inboxCount(s)).toBe('2+');
    expect(inboxCount(inboxReducer(s, { type: 'list', list: list([permissionItem()], 6) }))).toBe('1');
  });
});

describe('inbox controller', () => {
  it('reads at start and again, once per burst, when an event that may change the inbox arrives', async () => {
    const api = new FakeInboxApi();
    const feed = fakeFeed();
    const c = new InboxController(api, { debounceMs: 20 });
    c.start(feed);
    expect(api.reads).toHaveLength(1);
    api.reads[0]!.resolve(list([], 1));
    await flush();
    expect(c.store.getState().loaded).toBe(true);

    // Not about the inbox: no read.
    feed.emit(gev(2, 'session.title_changed', { title: 'x' }));
    feed.emit(gev(3, 'task.created', { taskId: 't2' }));
    await wait(40);
    expect(api.reads).toHaveLength(1);

    // A turn ending with its permission cancelled: one read.
    feed.emit(gev(4, 'permission.requested', { requestId: 'r1', options: [] }));
    feed.emit(gev(5, 'permission.resolved', { requestId: 'r1', state: 'cancelled' }));
    feed.emit(gev(6, 'turn.failed', { code: 'x', message: 'y' }));
    expect(api.reads).toHaveLength(1); // debounced
    await wait(40);
    expect(api.reads).toHaveLength(2);
    api.reads[1]!.resolve(list([permissionItem()], 6));
    await flush();
    expect(c.store.getState().items).toHaveLength(1);

    for (const type of ['turn.started', 'turn.completed', 'turn.cancelled', 'turn.interrupted', 'session.executor_status', 'session.closed', 'session.archived', 'turn.stalled', 'turn.stall_ended', 'budget.exceeded']) {
      feed.emit(gev(7, type));
      await wait(40);
    }
    expect(api.reads).toHaveLength(12);
    c.dispose();
    expect(feed.listeners()).toBe(0);
  });

  it('reads again when the stream comes back', async () => {
    const api = new FakeInboxApi();
    const feed = fakeFeed();
    const c = new InboxController(api, { debounceMs: 5 });
    c.start(feed);
    feed.state('catching_up', 'connecting');
    feed.state('open', 'catching_up');
    await wait(20);
    expect(api.reads).toHaveLength(2);
    feed.state('connecting', 'open');
    await wait(20);
    expect(api.reads).toHaveLength(2); // only coming back counts
    feed.state('open', 'connecting');
    await wait(20);
    expect(api.reads).toHaveLength(3);
    c.dispose();
  });

  it('an answer takes the item out at once and reads again; a lost race is no error', async () => {
    const api = new FakeInboxApi();
    const c = new InboxController(api, { debounceMs: 5 });
    c.start();
    api.reads[0]!.resolve(list([permissionItem('s1', 'r1'), permissionItem('s3', 'r2')], 3));
    await flush();
    const [first, second] = c.store.getState().items;
    await c.answer(first!, 'once');
    expect(api.answers).toEqual([['s1', 'r1', 'once']]);
    expect(c.store.getState().items.map((i) => i.id)).toEqual(['permission:s3:r2']);
    await wait(20);
    expect(api.reads).toHaveLength(2);

    // Answered in another tab first: 409 permission_already_resolved.
    api.answerImpl = () => Promise.reject(Object.assign(new Error('already'), { status: 409, code: 'permission_already_resolved' }));
    await c.answer(second!, 'no');
    expect(c.store.getState().items).toEqual([]);
    expect(c.store.getState().failed).toEqual({});
    c.dispose();
  });

  it('a failed answer keeps the item, with why', async () => {
    const api = new FakeInboxApi();
    const c = new InboxController(api, { debounceMs: 5 });
    c.start();
    api.reads[0]!.resolve(list([permissionItem()], 3));
    await flush();
    api.answerImpl = () => Promise.reject(Object.assign(new Error('boom'), { status: 500, detail: 'the store is down' }));
    await c.answer(c.store.getState().items[0]!, 'once');
    const s = c.store.getState();
    expect(s.items).toHaveLength(1);
    expect(s.failed['permission:s1:r1']).toBe('the store is down');
    expect(s.busy).toEqual({});
    c.dispose();
  });

  it('continues an interrupted turn; a decline says why and keeps the item', async () => {
    const api = new FakeInboxApi();
    const c = new InboxController(api, { debounceMs: 5 });
    c.start();
    api.reads[0]!.resolve(list([turnItem('interrupted_turn', 's2'), turnItem('interrupted_turn', 's4')], 3));
    await flush();
    const [a, b] = c.store.getState().items;
    await c.continueTurn(a!);
    expect(api.continues).toEqual(['s2']);
    expect(c.store.getState().items.map((i) => i.session.id)).toEqual(['s4']);
    api.continueImpl = () => Promise.resolve({ kind: 'declined', reason: 'turn_active' });
    await c.continueTurn(b!);
    expect(c.store.getState().items).toHaveLength(1);
    expect(c.store.getState().failed[b!.id]).toBe('turn_active');
    c.dispose();
  });

  it('continues a turn a budget stopped; while over, the 409 budget_exceeded is the failure', async () => {
    const api = new FakeInboxApi();
    const c = new InboxController(api, { debounceMs: 5 });
    c.start();
    api.reads[0]!.resolve(list([budgetItem('s6')], 3));
    await flush();
    const item = c.store.getState().items[0]!;
    api.continueImpl = () => Promise.resolve({ kind: 'declined', reason: 'budget_exceeded', problem: { status: 409, code: 'budget_exceeded', detail: 'continuation declined: budget_exceeded' } });
    await c.continueTurn(item);
    expect(c.store.getState().items).toHaveLength(1);
    expect(c.store.getState().failed[item.id]).toBe('budget_exceeded');
    // Raised meanwhile: the continuation is admitted, the item leaves.
    api.continueImpl = () => Promise.resolve({ kind: 'accepted', promptId: 'c1', interruption: { kind: 'interrupted_turn', canContinue: true, danglingToolCalls: [], notice: '' } });
    await c.continueTurn(item);
    expect(api.continues).toEqual(['s6', 's6']);
    expect(c.store.getState().items).toEqual([]);
    expect(c.store.getState().failed).toEqual({});
    c.dispose();
  });

  it('cancels a stalled turn: the item leaves at once; a failure keeps it, with why', async () => {
    const api = new FakeInboxApi();
    const c = new InboxController(api, { debounceMs: 5 });
    c.start();
    api.reads[0]!.resolve(list([stalledItem('s7'), stalledItem('s8')], 3));
    await flush();
    const [a, b] = c.store.getState().items;
    await c.cancelTurn(a!);
    expect(api.cancels).toEqual(['s7']);
    expect(c.store.getState().items.map((i) => i.session.id)).toEqual(['s8']);
    await wait(20);
    expect(api.reads).toHaveLength(2); // and reads again
    api.cancelImpl = () => Promise.reject(Object.assign(new Error('boom'), { status: 500, detail: 'the executor is gone' }));
    await c.cancelTurn(b!);
    expect(c.store.getState().items).toHaveLength(1);
    expect(c.store.getState().failed[b!.id]).toBe('the executor is gone');
    expect(c.store.getState().busy).toEqual({});
    c.dispose();
  });
});

describe('the global stream feeds the inbox', () => {
  /** A TasksApi with empty lists at cursor 1 whose stream the test pushes into. */
  function tasksFake(leading?: boolean) {
    const streams: FakeStream[] = [];
    const api: TasksApi = {
      listTasks: () => Promise.resolve({ tasks: [], cursor: cur(1) }),
      listSessions: () => Promise.resolve({ sessions: [session('s1', { taskId: 't1' })], cursor: cur(1) }),
      getTask: () => Promise.reject(new Error('no')),
      getSession: (id) => Promise.resolve(session(id)),
      updateSession: (id) => Promise.resolve(session(id)),
      globalEvents: (o) => {
        const s = new FakeStream({ onStateChange: o.onStateChange as (s: StreamState, p: StreamState) => void });
        if (leading !== undefined) Object.defineProperty(s, 'leading', { value: leading });
        streams.push(s);
        return s;
      },
    };
    return { api, streams };
  }

  it('asks for the inbox\'s events and tells each new one once', async () => {
    let types: string[] | undefined;
    const { api, streams } = tasksFake();
    const open = api.globalEvents;
    api.globalEvents = (o) => ((types = o.types), open(o));
    const c = new TasksController(api);
    const heard: string[] = [];
    const states: string[] = [];
    c.onEvent((ev) => heard.push(`${ev.type}@${(ev as { id?: string }).id}`));
    c.onConnection((s) => states.push(s));
    c.start();
    await flush();
    for (const t of ['permission.requested', 'permission.resolved', 'turn.started', 'turn.completed', 'turn.failed', 'turn.cancelled', 'turn.interrupted', 'turn.stalled', 'turn.stall_ended', 'budget.exceeded', 'session.executor_status']) {
      expect(types).toContain(t);
    }
    streams[0]!.setState('open');
    streams[0]!.push(gev(2, 'permission.requested', { requestId: 'r1', options: [] }), gev(2, 'permission.requested', { requestId: 'r1', options: [] }), gev(1, 'turn.started'), gev(3, 'turn.completed', { state: 'completed' }));
    await flush();
    // The repeat of 2 and the old 1 (a new leader relays what was applied) are not told.
    expect(heard).toEqual([`permission.requested@${cur(2)}`, `turn.completed@${cur(3)}`]);
    expect(states).toContain('open');
    expect(c.leads()).toBe(true);
    c.dispose();
  });

  it('says whether this tab leads the shared stream', async () => {
    const { api } = tasksFake(false);
    const c = new TasksController(api);
    c.start();
    await flush();
    expect(c.leads()).toBe(false);
    c.dispose();
  });

  it('the sidebar counts turn and permission events as activity, and nothing else', () => {
    let s = tasksReducer(initialTasksState(), { type: 'lists', tasks: [], sessions: [session('s1', { taskId: 't1', state: 'RUNNING', updatedAt: '2026-01-01T00:00:00Z' })], cursor: cur(1) });
    const before = s.sessions.get('s1')!;
    for (const [i, type] of ['permission.requested', 'turn.completed', 'turn.stalled', 'session.executor_status'].entries()) {
      s = tasksReducer(s, { type: 'event', event: gev(2 + i, type, { state: 'completed', status: 'ready' }) });
    }
    const after = s.sessions.get('s1')!;
    expect(after.state).toBe('RUNNING');
    expect(after.title).toBe(before.title);
    expect(after.lastActivityAt! > before.lastActivityAt!).toBe(true);
    expect(s.cursor).toBe(cur(5));
  });
});
