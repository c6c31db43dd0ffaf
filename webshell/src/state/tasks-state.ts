// Tasks and their sessions for the sidebar, kept live by the global stream
// (GET /events). A reducer plus a small controller.
//
// Loading: the lists (GET /tasks, GET /sessions pages) each return the
// global cursor they are consistent with; the state starts at the earliest
// of them and the stream continues from there, so a page load replays only
// what changed since the lists, never the whole log. Events at or below
// the state's cursor are dropped (a leader tab may relay older ones).
import { errorText, isUnauthorized } from '../lib/errors';
import { parsePosition } from './cursor';
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
  /** When the session last did something (its latest event), for "5m ago". */
  lastActivityAt?: string;
  /** Archived sessions stay out of the sidebar (search still finds them). */
  archived?: boolean;
  recoveryKind?: RecoverySummary['kind'];
  /** Why its last turn stopped (budget_exceeded: a budget stopped it). */
  recoveryReason?: string;
  /** The session and turn a fork was made from (docs/rewind.md). */
  forkedFrom?: { sessionId: string; promptId: string; handoff?: boolean };
}

/**
 * The sessions of the sidebar by id and by task. An event changes one
 * entry: the index is updated in place (the entry itself is replaced, never
 * mutated), so the cost of an event does not grow with the number of
 * sessions, and untouched entries keep their identity. The index belongs
 * to the reducer; readers only read it.
 */
export class SessionIndex {
  #byId = new Map<string, SessionSummary>();
  #byTask = new Map<string, Set<string>>();

  get size(): number {
    return this.#byId.size;
  }
  get(id: string): SessionSummary | undefined {
    return this.#byId.get(id);
  }
  values(): IterableIterator<SessionSummary> {
    return this.#byId.values();
  }
  /** The sessions of one task, in no particular order. */
  ofTask(taskId: string): SessionSummary[] {
    const ids = this.#byTask.get(taskId);
    return ids ? [...ids].map((id) => this.#byId.get(id)!) : [];
  }
  /** Sets one entry (reducer only). */
  put(s: SessionSummary): void {
    const prev = this.#byId.get(s.id);
    if (prev && prev.taskId !== s.taskId) this.#byTask.get(prev.taskId)?.delete(s.id);
    this.#byId.set(s.id, s);
    let ids = this.#byTask.get(s.taskId);
    if (!ids) this.#byTask.set(s.taskId, (ids = new Set()));
    ids.add(s.id);
  }
}

export interface TasksState {
  tasks: Record<string, Task>;
  taskOrder: string[];
  sessions: SessionIndex;
  /** The global cursor the state is consistent with (lists, then events). */
  cursor?: string;
  connection: StreamState | 'idle';
  loaded: boolean;
  error?: string;
}

export type TasksAction =
  | { type: 'lists'; tasks: Task[]; sessions: Session[]; cursor?: string }
  | { type: 'task'; task: Task }
  | { type: 'session'; session: Session }
  | { type: 'event'; event: TetherEvent }
  | { type: 'connection'; state: StreamState }
  | { type: 'error'; error?: string };

export function initialTasksState(): TasksState {
  return { tasks: {}, taskOrder: [], sessions: new SessionIndex(), connection: 'idle', loaded: false };
}

function summaryOf(s: Session): SessionSummary {
  return {
    id: s.id,
    taskId: s.taskId,
    agentProfileId: s.agentProfileId,
    cwd: s.cwd,
    title: s.title,
    state: s.state,
    createdAt: s.createdAt,
    lastActivityAt: s.lastActivityAt ?? s.updatedAt,
    archived: s.archived ?? false,
    ...(s.forkedFrom ? { forkedFrom: s.forkedFrom } : {}),
  };
}

function sortTasks(tasks: Record<string, Task>): string[] {
  return Object.values(tasks)
    .sort((a, b) => (b.createdAt ?? '').localeCompare(a.createdAt ?? ''))
    .map((t) => t.id);
}

/** Has the state already applied the event with this id? */
function applied(s: TasksState, id: string | undefined): boolean {
  const at = parsePosition(s.cursor);
  const ev = parsePosition(id);
  return !!at && !!ev && at.epoch === ev.epoch && ev.seq <= at.seq;
}

/** The state with one session entry set: a new state object, the index updated in place. */
function withSession(s: TasksState, sum: SessionSummary): TasksState {
  s.sessions.put(sum);
  return { ...s };
}

export function tasksReducer(s: TasksState, a: TasksAction): TasksState {
  switch (a.type) {
    case 'lists': {
      const tasks = { ...s.tasks };
      for (const t of a.tasks) tasks[t.id] = t;
      for (const x of a.sessions) s.sessions.put({ ...s.sessions.get(x.id), ...summaryOf(x) });
      return { ...s, tasks, taskOrder: sortTasks(tasks), cursor: a.cursor, loaded: true, error: undefined };
    }
    case 'task': {
      const tasks = { ...s.tasks, [a.task.id]: a.task };
      return { ...s, tasks, taskOrder: sortTasks(tasks) };
    }
    case 'session':
      return withSession(s, { ...s.sessions.get(a.session.id), ...summaryOf(a.session) });
    case 'connection':
      return { ...s, connection: a.state };
    case 'error':
      return { ...s, error: a.error };
    case 'event': {
      const ev = a.event;
      const id = (ev as { id?: string }).id;
      if (applied(s, id)) return s;
      const next = applyEvent(s, ev);
      return id ? { ...next, cursor: id } : next;
    }
  }
}

function applyEvent(s: TasksState, ev: TetherEvent): TasksState {
  const d = ev.data as { sessionId?: string; taskId?: string };
  const live = d.sessionId ? s.sessions.get(d.sessionId) : undefined;
  if (live && ev.type !== 'session.title_changed' && ev.type !== 'session.archived') {
    // Anything the session does is activity (renaming and archiving are not).
    s = withSession(s, { ...live, lastActivityAt: new Date().toISOString() });
  }
  switch (ev.type) {
    case 'session.created': {
      const id = d.sessionId;
      if (!id) return s;
      const prev = s.sessions.get(id);
      return withSession(s, {
        id,
        taskId: ev.data.taskId ?? prev?.taskId ?? '',
        agentProfileId: ev.data.agentProfileId,
        cwd: ev.data.cwd,
        title: ev.data.title || prev?.title,
        state: prev?.state ?? ev.data.state,
        createdAt: prev?.createdAt,
      });
    }
    case 'session.state_changed':
    case 'session.closed': {
      const prev = d.sessionId ? s.sessions.get(d.sessionId) : undefined;
      if (!prev) return s;
      return withSession(s, { ...prev, state: ev.data.state });
    }
    case 'session.title_changed': {
      const prev = d.sessionId ? s.sessions.get(d.sessionId) : undefined;
      if (!prev) return s;
      return withSession(s, { ...prev, title: ev.data.title });
    }
    case 'session.archived': {
      const prev = d.sessionId ? s.sessions.get(d.sessionId) : undefined;
      if (!prev) return s;
      return withSession(s, { ...prev, archived: ev.data.archived });
    }
    case 'session.recovery_changed': {
      const prev = d.sessionId ? s.sessions.get(d.sessionId) : undefined;
      if (!prev) return s;
      return withSession(s, { ...prev, recoveryKind: ev.data.recovery.kind, recoveryReason: ev.data.recovery.interruptReason });
    }
    case 'session.forked': {
      const prev = d.sessionId ? s.sessions.get(d.sessionId) : undefined;
      if (!prev) return s;
      return withSession(s, { ...prev, forkedFrom: { sessionId: ev.data.fromSessionId, promptId: ev.data.atPromptId, handoff: ev.data.handoff } });
    }
    case 'task.created': {
      const id = d.taskId;
      if (!id || s.tasks[id]) return s;
      const t: Task = { id, title: ev.data.title, state: ev.data.state, createdAt: ev.data.createdAt, updatedAt: ev.data.createdAt };
      if (ev.data.workspace) t.workspace = ev.data.workspace;
      const tasks = { ...s.tasks, [id]: t };
      return { ...s, tasks, taskOrder: sortTasks(tasks) };
    }
    case 'task.updated':
    case 'task.state_changed': {
      const prev = d.taskId ? s.tasks[d.taskId] : undefined;
      if (!prev) return s;
      const t = ev.type === 'task.updated' ? { ...prev, title: ev.data.title } : { ...prev, state: ev.data.state };
      return { ...s, tasks: { ...s.tasks, [prev.id]: t } };
    }
    default:
      return s;
  }
}

/** The sessions forked from session id (hand-offs included), oldest first. */
export function forksOf(s: TasksState, taskId: string, id: string): SessionSummary[] {
  return s.sessions
    .ofTask(taskId)
    .filter((x) => x.forkedFrom?.sessionId === id)
    .sort((a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? ''));
}

/** Sessions of a task that are not archived, newest first. */
export function sessionsOfTask(s: TasksState, taskId: string): SessionSummary[] {
  return s.sessions
    .ofTask(taskId)
    .filter((x) => !x.archived)
    .sort((a, b) => (b.createdAt ?? '').localeCompare(a.createdAt ?? ''));
}

export interface TasksApi {
  listTasks(): Promise<{ tasks: Task[]; cursor: string }>;
  listSessions(params?: { limit?: number; pageToken?: string; q?: string; archived?: boolean }): Promise<{ sessions: Session[]; nextPageToken?: string; cursor: string }>;
  /** Renames (title) or archives (archived) a session. */
  updateSession(id: string, body: { title?: string; archived?: boolean }): Promise<Session>;
  getTask(id: string): Promise<Task>;
  getSession(id: string): Promise<Session>;
  globalEvents(opts: {
    types?: string[];
    /** Where to start, asked (and awaited) whenever a stream opens. */
    cursor?: () => Promise<string | undefined>;
    onStateChange?: (s: StreamState, prev: StreamState) => void;
  }): AsyncIterable<TetherEvent> & { close(): void; resyncFrom?(cursor: string): void; readonly leading?: boolean };
}

const GLOBAL_TYPES = [
  'session.created',
  'session.state_changed',
  'session.closed',
  'session.recovery_changed',
  'session.title_changed',
  'session.archived',
  'session.forked',
  'task.created',
  'task.updated',
  'task.state_changed',
  // For the inbox (docs/inbox.md) and the notifications: what may add an
  // item or take one out. The reducer only counts them as activity.
  'session.executor_status',
  'permission.requested',
  'permission.resolved',
  'turn.started',
  'turn.completed',
  'turn.failed',
  'turn.cancelled',
  'turn.interrupted',
  // The stall watchdog and budgets (docs/inbox.md, "Budgets").
  'turn.stalled',
  'turn.stall_ended',
  'budget.exceeded',
];

/**
 * What the global stream tells others (the inbox, the notifications):
 * each event once, as this tab applies it, and the stream's state.
 */
export interface GlobalFeed {
  onEvent(listener: (ev: TetherEvent) => void): () => void;
  onConnection(listener: (state: StreamState, prev: StreamState) => void): () => void;
  /** Whether this tab reads the stream itself (see shared-global.ts). */
  leads(): boolean;
}

/** The earliest of a list's cursors (all are of the global stream); undefined if they do not compare. */
function earliest(cursors: string[]): string | undefined {
  let out: string | undefined;
  for (const c of cursors) {
    const p = parsePosition(c);
    const o = parsePosition(out);
    if (!p || (o && o.epoch !== p.epoch)) return undefined;
    if (!o || p.seq < o.seq) out = c;
  }
  return out;
}

export class TasksController implements GlobalFeed {
  readonly store: Store<TasksState, TasksAction> = createStore(tasksReducer, initialTasksState());
  #api: TasksApi;
  #stream: { close(): void; readonly leading?: boolean } | undefined;
  #eventListeners = new Set<(ev: TetherEvent) => void>();
  #connectionListeners = new Set<(state: StreamState, prev: StreamState) => void>();
  #disposed = false;
  #fetching = new Set<string>();
  #onUnauthorized: (() => void) | undefined;

  constructor(api: TasksApi, onUnauthorized?: () => void) {
    this.#api = api;
    this.#onUnauthorized = onUnauthorized;
  }

  #loaded: Promise<void> = Promise.resolve();

  start(): void {
    // The stream opens (or this tab joins the leader's relay) at once; it
    // starts from the lists' cursor once they are in.
    this.#loaded = this.refresh();
    this.#follow();
  }

  dispose(): void {
    this.#disposed = true;
    this.#stream?.close();
    this.#eventListeners.clear();
    this.#connectionListeners.clear();
  }

  onEvent(listener: (ev: TetherEvent) => void): () => void {
    this.#eventListeners.add(listener);
    return () => this.#eventListeners.delete(listener);
  }

  onConnection(listener: (state: StreamState, prev: StreamState) => void): () => void {
    this.#connectionListeners.add(listener);
    return () => this.#connectionListeners.delete(listener);
  }

  leads(): boolean {
    return this.#stream?.leading ?? true;
  }

  #tell(ev: TetherEvent): void {
    for (const l of [...this.#eventListeners]) {
      try {
        l(ev);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  async refresh(): Promise<void> {
    try {
      const [tasks, sessions] = await Promise.all([this.#api.listTasks(), this.#listAllSessions()]);
      if (this.#disposed) return;
      const cursor = earliest([tasks.cursor, ...sessions.cursors]);
      this.store.dispatch({ type: 'lists', tasks: tasks.tasks, sessions: sessions.sessions, cursor });
    } catch (e) {
      if (isUnauthorized(e)) this.#onUnauthorized?.();
      else if (!this.#disposed) this.store.dispatch({ type: 'error', error: errorText(e) });
    }
  }

  async #listAllSessions(): Promise<{ sessions: Session[]; cursors: string[] }> {
    const out: Session[] = [];
    const cursors: string[] = [];
    let pageToken: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await this.#api.listSessions({ limit: 200, ...(pageToken ? { pageToken } : {}) });
      out.push(...page.sessions);
      cursors.push(page.cursor);
      if (!page.nextPageToken) break;
      pageToken = page.nextPageToken;
    }
    return { sessions: out, cursors };
  }

  /** Renames or archives a session; the stream brings the change to every tab. */
  async updateSession(id: string, body: { title?: string; archived?: boolean }): Promise<void> {
    const s = await this.#api.updateSession(id, body);
    if (!this.#disposed) this.store.dispatch({ type: 'session', session: s });
  }

  /** Sessions whose title or ended turns hold every word of q (the server's search), newest first. */
  async search(q: string, archived = false): Promise<SessionSummary[]> {
    const page = await this.#api.listSessions({ q, limit: 50, ...(archived ? { archived } : {}) });
    return page.sessions.map(summaryOf);
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
      cursor: async () => {
        await this.#loaded;
        return this.store.getState().cursor;
      },
      onStateChange: (st, prev) => {
        if (this.#disposed) return;
        this.store.dispatch({ type: 'connection', state: st });
        for (const l of [...this.#connectionListeners]) l(st, prev);
      },
    });
    this.#stream = stream;
    void (async () => {
      try {
        await this.#loaded; // events relayed meanwhile wait in the stream
        for await (const ev of stream) {
          if (this.#disposed) return;
          if (ev.type === 'resync_required') {
            // The global log was reset: follow from its head and reload the
            // lists (their cursor is of the new epoch).
            stream.resyncFrom?.(ev.data.cursor);
            this.#loaded = this.refresh();
            this.#tell(ev);
            continue;
          }
          // Listeners hear an event once: not again when a new leader
          // relays what this tab already applied.
          const id = (ev as { id?: string }).id;
          const before = this.store.getState().cursor;
          this.store.dispatch({ type: 'event', event: ev });
          if (!id || (before !== id && this.store.getState().cursor === id)) this.#tell(ev);
          const d = ev.data as { taskId?: string; sessionId?: string };
          this.#ensureTask(d.taskId);
          const st = this.store.getState();
          if (ev.type === 'session.created' && d.sessionId && st.loaded && !st.sessions.get(d.sessionId)?.createdAt) {
            this.#api.getSession(d.sessionId).then((s) => !this.#disposed && this.store.dispatch({ type: 'session', session: s })).catch(() => {});
          }
        }
      } catch (e) {
        if (isUnauthorized(e)) this.#onUnauthorized?.();
      }
    })();
  }
}
