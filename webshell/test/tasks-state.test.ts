// The sidebar's tasks and sessions: loaded from the lists, then kept live
// by the global stream from the lists' cursor.
import { describe, expect, it } from 'vitest';
import { TasksController, initialTasksState, sessionsOfTask, tasksReducer, type TasksApi, type TasksState } from '../src/state/tasks-state';
import type { Session, StreamState, Task, TetherEvent } from '../src/state/types';
import { FakeStream, cur, flush, session } from './fixtures';

const task = (id: string): Task => ({ id, title: id, state: 'TODO', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z' });
const gev = (n: number, type: string, data: Record<string, unknown>) => ({ type, id: cur(n), data }) as unknown as TetherEvent;

/** A TasksApi whose lists answer with the given cursors; it records the streams it opens. */
function fakeApi(opts: { taskCursor: number; pages: { sessions: Session[]; cursor: number }[] }) {
  const streams: FakeStream[] = [];
  const opened: (string | undefined)[] = [];
  const api: TasksApi = {
    listTasks: () => Promise.resolve({ tasks: [task('t1')], cursor: cur(opts.taskCursor) }),
    listSessions: (p) => {
      const i = p?.pageToken ? Number(p.pageToken) : 0;
      const page = opts.pages[i]!;
      return Promise.resolve({ sessions: page.sessions, cursor: cur(page.cursor), ...(i + 1 < opts.pages.length ? { nextPageToken: String(i + 1) } : {}) });
    },
    getTask: (id) => Promise.resolve(task(id)),
    getSession: (id) => Promise.resolve(session(id)),
    updateSession: (id, body) => Promise.resolve({ ...session(id), ...body }),
    globalEvents: (o) => {
      const s = new FakeStream({ onStateChange: o.onStateChange as (s: StreamState, p: StreamState) => void });
      streams.push(s);
      void o.cursor?.().then((c) => {
        opened.push(c);
        s.cursor = c;
      });
      return s;
    },
  };
  return { api, streams, opened };
}

describe('tasks state', () => {
  it('takes titles and archives from the stream: an archived session leaves its task\'s list', async () => {
    const { api, streams } = fakeApi({ taskCursor: 1, pages: [{ sessions: [session('a', { taskId: 't1' }), session('b', { taskId: 't1' })], cursor: 1 }] });
    const c = new TasksController(api);
    c.start();
    await flush();
    streams[0]!.push(
      gev(2, 'session.title_changed', { sessionId: 'a', taskId: 't1', title: 'Fix the parser', source: 'prompt' }),
      gev(3, 'session.archived', { sessionId: 'b', taskId: 't1', archived: true }),
    );
    await flush();
    const st = c.store.getState();
    expect(st.sessions.get('a')!.title).toBe('Fix the parser');
    expect(sessionsOfTask(st, 't1').map((x) => x.id)).toEqual(['a']);
    streams[0]!.push(gev(4, 'session.archived', { sessionId: 'b', taskId: 't1', archived: false }));
    await flush();
    expect(sessionsOfTask(c.store.getState(), 't1').map((x) => x.id).sort()).toEqual(['a', 'b']);
  });

  it('streams the global log from the earliest list cursor, and drops events the lists already hold', async () => {
    const { api, streams, opened } = fakeApi({
      taskCursor: 9,
      pages: [
        { sessions: [session('a', { taskId: 't1', state: 'RUNNING' })], cursor: 8 },
        { sessions: [session('b', { taskId: 't1', state: 'RUNNING' })], cursor: 10 },
      ],
    });
    const c = new TasksController(api);
    c.start();
    await flush();
    expect(opened).toEqual([cur(8)]); // not the beginning of the log
    expect(c.store.getState().cursor).toBe(cur(8));
    streams[0]!.push(
      gev(7, 'session.state_changed', { sessionId: 'a', taskId: 't1', state: 'STARTING' }), // older than the lists: dropped
      gev(9, 'session.state_changed', { sessionId: 'b', taskId: 't1', state: 'WAITING_FOR_INPUT' }),
      gev(11, 'task.created', { taskId: 't2', title: 'new', state: 'TODO', createdAt: '2026-01-02T00:00:00Z' }),
      gev(12, 'task.updated', { taskId: 't2', title: 'renamed' }),
      gev(13, 'task.state_changed', { taskId: 't1', state: 'REVIEW', previousState: 'TODO' }),
    );
    await flush();
    const st = c.store.getState();
    expect(st.sessions.get('a')!.state).toBe('RUNNING');
    expect(st.sessions.get('b')!.state).toBe('WAITING_FOR_INPUT');
    expect(st.tasks['t2']!.title).toBe('renamed');
    expect(st.tasks['t1']!.state).toBe('REVIEW');
    expect(st.taskOrder).toEqual(['t2', 't1']);
    expect(st.cursor).toBe(cur(13));
    // A relayed duplicate (another tab's leader behind us) changes nothing.
    const before = c.store.getState();
    streams[0]!.push(gev(9, 'session.state_changed', { sessionId: 'b', taskId: 't1', state: 'RUNNING' }));
    await flush();
    expect(c.store.getState()).toBe(before);
    c.dispose();
  });

  it('an event replaces one session entry without copying the others', () => {
    const sessions = Array.from({ length: 1000 }, (_, i) => session(`s${i}`, { taskId: `t${i % 10}`, state: 'RUNNING' }));
    const s0: TasksState = tasksReducer(initialTasksState(), { type: 'lists', tasks: [], sessions, cursor: cur(1) });
    const untouched = s0.sessions.get('s1');
    const old = s0.sessions.get('s500')!;
    const s1 = tasksReducer(s0, { type: 'event', event: gev(2, 'session.state_changed', { sessionId: 's500', taskId: 't0', state: 'COMPLETED' }) });
    expect(s1).not.toBe(s0); // a change is a new state
    expect(s1.sessions).toBe(s0.sessions); // the index is not copied
    expect(s1.sessions.get('s1')).toBe(untouched);
    expect(s1.sessions.get('s500')!.state).toBe('COMPLETED');
    expect(old.state).toBe('RUNNING'); // the entry was replaced, not mutated
    expect(sessionsOfTask(s1, 't0')).toHaveLength(100);
  });
});
