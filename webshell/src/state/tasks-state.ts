// Tasks and their sessions for the sidebar, kept live by the global stream
// (GET /events). Pure reducer plus a small controller.
import { errorText, isUnauthorized } from '../lib/errors';
import { createStore, type Store } from './store';
import type { RecoverySummary, Session, SessionState, StreamState, Task, TetherEvent } from './types';

export interface SessionSummary {
  id: string;
  taskId: string;
  agentProfileId: string;
  cwd: string;
  title?: string;
  state: SessionState;
  createdAt?: string;
  recoveryKind?: RecoverySummary['kind'];
}

export interface TasksState {
  tasks: Record<string, Task>;
  taskOrder: string[];
  sessions: Record<string, SessionSummary>;
  connection: StreamState | 'idle';
  loaded: boolean;
  error?: string;
}

export type TasksAction =
  | { type: 'lists'; tasks: Task[]; sessions: Session[] }
  | { type: 'task'; task: Task }
  | { type: 'session'; session: Session }
  | { type: 'event'; event: TetherEvent }
  | { type: 'connection'; state: StreamState }
  | { type: 'error'; error?: string };

export function initialTasksState(): TasksState {
  return { tasks: {}, taskOrder: [], sessions: {}, connection: 'idle', loaded: false };
}

function summaryOf(s: Session): SessionSummary {
  return { id: s.id, taskId: s.taskId, agentProfileId: s.agentProfileId, cwd: s.cwd, title: s.title, state: s.state, createdAt: s.createdAt };
}

function sortTasks(tasks: Record<string, Task>): string[] {
  return Object.values(tasks)
    .sort((a, b) => (b.createdAt ?? '').localeCompare(a.createdAt ?? ''))
    .map((t) => t.id);
}

export function tasksReducer(s: TasksState, a: TasksAction): TasksState {
  switch (a.type) {
    case 'lists': {
      const tasks = { ...s.tasks };
      for (const t of a.tasks) tasks[t.id] = t;
      const sessions = { ...s.sessions };
      for (const x of a.sessions) sessions[x.id] = { ...sessions[x.id], ...summaryOf(x) };
      return { ...s, tasks, sessions, taskOrder: sortTasks(tasks), loaded: true, error: undefined };
    }
    case 'task': {
      const tasks = { ...s.tasks, [a.task.id]: a.task };
      return { ...s, tasks, taskOrder: sortTasks(tasks) };
    }
    case 'session':
      return { ...s, sessions: { ...s.sessions, [a.session.id]: { ...s.sessions[a.session.id], ...summaryOf(a.session) } } };
    case 'connection':
      return { ...s, connection: a.state };
    case 'error':
      return { ...s, error: a.error };
    case 'event': {
      const ev = a.event;
      const d = ev.data as { sessionId?: string; taskId?: string };
      switch (ev.type) {
        case 'session.created': {
          const id = d.sessionId;
          if (!id) return s;
          const prev = s.sessions[id];
          const sum: SessionSummary = {
            id,
            taskId: ev.data.taskId ?? prev?.taskId ?? '',
            agentProfileId: ev.data.agentProfileId,
            cwd: ev.data.cwd,
            title: ev.data.title || prev?.title,
            state: prev?.state ?? ev.data.state,
            createdAt: prev?.createdAt,
          };
          return { ...s, sessions: { ...s.sessions, [id]: sum } };
        }
        case 'session.state_changed':
        case 'session.closed': {
          const id = d.sessionId;
          const prev = id ? s.sessions[id] : undefined;
          if (!id || !prev) return s;
          return { ...s, sessions: { ...s.sessions, [id]: { ...prev, state: ev.data.state } } };
        }
        case 'session.recovery_changed': {
          const id = d.sessionId;
          const prev = id ? s.sessions[id] : undefined;
          if (!id || !prev) return s;
          return { ...s, sessions: { ...s.sessions, [id]: { ...prev, recoveryKind: ev.data.recovery.kind } } };
        }
        case 'task.state_changed': {
          const id = d.taskId;
          const prev = id ? s.tasks[id] : undefined;
          if (!id || !prev) return s;
          return { ...s, tasks: { ...s.tasks, [id]: { ...prev, state: ev.data.state } } };
        }
        default:
          return s;
      }
    }
  }
}

/** Sessions of a task, newest first. */
export function sessionsOfTask(s: TasksState, taskId: string): SessionSummary[] {
  return Object.values(s.sessions)
    .filter((x) => x.taskId === taskId)
    .sort((a, b) => (b.createdAt ?? '').localeCompare(a.createdAt ?? ''));
}

export interface TasksApi {
  listTasks(): Promise<{ tasks: Task[] }>;
  listSessions(params?: { limit?: number; pageToken?: string }): Promise<{ sessions: Session[]; nextPageToken?: string }>;
  getTask(id: string): Promise<Task>;
  getSession(id: string): Promise<Session>;
  globalEvents(opts: {
    types?: string[];
    onStateChange?: (s: StreamState, prev: StreamState) => void;
  }): AsyncIterable<TetherEvent> & { close(): void };
}

const GLOBAL_TYPES = ['session.created', 'session.state_changed', 'session.closed', 'session.recovery_changed', 'task.state_changed'];

export class TasksController {
  readonly store: Store<TasksState, TasksAction> = createStore(tasksReducer, initialTasksState());
  #api: TasksApi;
  #stream: { close(): void } | undefined;
  #disposed = false;
  #fetching = new Set<string>();
  #onUnauthorized: (() => void) | undefined;

  constructor(api: TasksApi, onUnauthorized?: () => void) {
    this.#api = api;
    this.#onUnauthorized = onUnauthorized;
  }

  start(): void {
    void this.refresh();
    this.#follow();
  }

  dispose(): void {
    this.#disposed = true;
    this.#stream?.close();
  }

  async refresh(): Promise<void> {
    try {
      const [tasks, sessions] = await Promise.all([this.#api.listTasks(), this.#listAllSessions()]);
      if (this.#disposed) return;
      this.store.dispatch({ type: 'lists', tasks: tasks.tasks, sessions });
    } catch (e) {
      if (isUnauthorized(e)) this.#onUnauthorized?.();
      else if (!this.#disposed) this.store.dispatch({ type: 'error', error: errorText(e) });
    }
  }

  async #listAllSessions(): Promise<Session[]> {
    const out: Session[] = [];
    let pageToken: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await this.#api.listSessions({ limit: 200, ...(pageToken ? { pageToken } : {}) });
      out.push(...page.sessions);
      if (!page.nextPageToken) break;
      pageToken = page.nextPageToken;
    }
    return out;
  }

  /** Adds a session the user just created, without waiting for the stream. */
  addSession(s: Session): void {
    this.store.dispatch({ type: 'session', session: s });
    this.#ensureTask(s.taskId);
  }

  addTask(t: Task): void {
    this.store.dispatch({ type: 'task', task: t });
  }

  #ensureTask(taskId: string | undefined): void {
    const st = this.store.getState();
    // Before the lists arrive they will bring it; after, fetch what is new.
    if (!taskId || !st.loaded || st.tasks[taskId] || this.#fetching.has(taskId)) return;
    this.#fetching.add(taskId);
    this.#api
      .getTask(taskId)
      .then((t) => !this.#disposed && this.store.dispatch({ type: 'task', task: t }))
      .catch(() => {})
      .finally(() => this.#fetching.delete(taskId));
  }

  #follow(): void {
    const stream = this.#api.globalEvents({
      types: GLOBAL_TYPES,
      onStateChange: (st) => !this.#disposed && this.store.dispatch({ type: 'connection', state: st }),
    });
    this.#stream = stream;
    void (async () => {
      try {
        for await (const ev of stream) {
          if (this.#disposed) return;
          if (ev.type === 'resync_required') {
            // The global log was reset: reload the lists and follow from its head.
            (stream as unknown as { resyncFrom?: (c: string) => void }).resyncFrom?.(ev.data.cursor);
            void this.refresh();
            continue;
          }
          this.store.dispatch({ type: 'event', event: ev });
          const d = ev.data as { taskId?: string; sessionId?: string };
          this.#ensureTask(d.taskId);
          const st = this.store.getState();
          if (ev.type === 'session.created' && d.sessionId && st.loaded && !st.sessions[d.sessionId]?.createdAt) {
            this.#api.getSession(d.sessionId).then((s) => !this.#disposed && this.store.dispatch({ type: 'session', session: s })).catch(() => {});
          }
        }
      } catch (e) {
        if (isUnauthorized(e)) this.#onUnauthorized?.();
      }
    })();
  }
}
