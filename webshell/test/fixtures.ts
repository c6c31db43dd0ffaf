// Builders and fakes for the unit tests: daemon shapes as the SDK types
// them, a fake SessionApi with promises the test resolves, and a fake
// event stream the test pushes into.
import type { ContinueOutcome, EventStreamLike, SessionApi, StreamOptions, StreamState } from '../src/state/types';
import type { Budget, InboxItem, RecoverySummary, Session, SessionContext, SessionStatus, SessionUpdate, TetherEvent, Transcript, WorkspaceEntry } from '../src/state/types';
import { initialSessionState, sessionReducer, type SessionAction, type SessionViewState } from '../src/state/session-state';

export const EPOCH = 'ep1';
export const cur = (seq: number, epoch = EPOCH) => `${epoch}:${seq}`;

export function transcript(sessionId: string, seq: number, over: Partial<Transcript> = {}): Transcript {
  return { sessionId, eventEpoch: EPOCH, cursor: cur(seq), turns: [], messages: [], toolCalls: [], pendingPermissions: [], ...over };
}

export const interruptedTurn = (promptId = 'p1', kind: RecoverySummary['kind'] = 'interrupted_turn'): RecoverySummary => ({
  kind,
  canContinue: true,
  promptId,
  interruptReason: 'daemon_restart',
  danglingToolCalls: [{ id: 'tool-1', title: 'Run tests', kind: 'execute' }],
  notice: 'The last turn was interrupted.',
});

export const clean = (reason = 'nothing_to_continue'): RecoverySummary => ({ kind: 'clean', canContinue: false, reason, danglingToolCalls: [], notice: 'Nothing to continue.' });

export function context(sessionId: string, seq: number, recovery: RecoverySummary, over: Partial<SessionContext> = {}): SessionContext {
  return {
    sessionId,
    taskId: 't1',
    cwd: '/w',
    state: 'WAITING_FOR_INPUT',
    agent: { profileId: 'demo', available: true },
    recovery,
    eventEpoch: EPOCH,
    cursor: cur(seq),
    ...over,
  };
}

export function status(sessionId: string, over: Partial<SessionStatus> = {}): SessionStatus {
  return {
    sessionId,
    taskId: 't1',
    state: 'WAITING_FOR_INPUT',
    agentProfileId: 'demo',
    isAgentRunning: true,
    isResumable: true,
    needsResume: false,
    resumeReason: 'agent_running',
    executorStatus: 'ready',
    runtime: 'standalone',
    contextLost: false,
    ...over,
  };
}

/** A workspace listing's entry for path (its name is the last segment). */
export const workspaceEntry = (path: string, type: WorkspaceEntry['type'] = 'file'): WorkspaceEntry => ({
  path,
  name: path.split('/').pop()!,
  type,
  size: 10,
  mode: '-rw-r--r--',
  modifiedAt: '2026-01-01T00:00:00Z',
});

export function session(id: string, over: Partial<Session> = {}): Session {
  return {
    id,
    taskId: 't1',
    agentProfileId: 'demo',
    cwd: '/w',
    state: 'WAITING_FOR_INPUT',
    eventEpoch: EPOCH,
    createdAt: '2026-01-01T00:00:00Z',
    updatedAt: '2026-01-01T00:00:00Z',
    ...over,
  };
}

/** An event with cursor `seq` for session `sid`. */
export function ev(sid: string, seq: number, type: string, data: Record<string, unknown> = {}): TetherEvent {
  return { type, id: cur(seq), data: { sessionId: sid, taskId: 't1', ...data } } as unknown as TetherEvent;
}

/** A state folded from actions, starting at a loaded snapshot that is connected. */
export function loaded(
  sid: string,
  opts: { seq?: number; recovery?: RecoverySummary; transcript?: Partial<Transcript>; st?: Partial<SessionStatus>; session?: Partial<Session> } = {},
): SessionViewState {
  const seq = opts.seq ?? 10;
  let s = initialSessionState(sid);
  s = sessionReducer(s, { type: 'load/start', sessionId: sid, gen: 1 });
  s = sessionReducer(s, {
    type: 'load/snapshot',
    sessionId: sid,
    gen: 1,
    transcript: transcript(sid, seq, opts.transcript),
    status: status(sid, opts.st),
    session: session(sid, opts.session),
    context: opts.recovery ? context(sid, seq, opts.recovery) : undefined,
    contextRead: 0,
  });
  s = sessionReducer(s, { type: 'connection', sessionId: sid, gen: 1, state: 'open' });
  return s;
}

export function fold(s: SessionViewState, ...actions: SessionAction[]): SessionViewState {
  return actions.reduce(sessionReducer, s);
}

export const evAction = (s: SessionViewState, event: TetherEvent): SessionAction => ({ type: 'event', sessionId: s.sessionId, gen: s.loadGen, event });

// ---------------------------------------------------------------- fakes

export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export class FakeStream implements EventStreamLike {
  state: StreamState = 'connecting';
  cursor: string | undefined;
  closed = false;
  #queue: TetherEvent[] = [];
  #wake: (() => void) | undefined;
  #onState: StreamOptions['onStateChange'];
  constructor(opts: StreamOptions) {
    this.cursor = opts.cursor;
    this.#onState = opts.onStateChange;
  }
  setState(s: StreamState): void {
    const prev = this.state;
    this.state = s;
    this.#onState?.(s, prev);
  }
  push(...evs: TetherEvent[]): void {
    this.#queue.push(...evs);
    this.#wake?.();
  }
  close(): void {
    this.closed = true;
    this.setState('closed');
    this.#wake?.();
  }
  resyncFrom(cursor: string): void {
    this.cursor = cursor;
  }
  async *[Symbol.asyncIterator](): AsyncIterator<TetherEvent> {
    while (!this.closed) {
      if (this.#queue.length === 0) {
        await new Promise<void>((r) => (this.#wake = r));
        continue;
      }
      yield this.#queue.shift()!;
    }
  }
}

/** A SessionApi whose calls are recorded and answered by the test. */
export class FakeApi implements SessionApi {
  readonly id: string;
  calls: { name: string; args: unknown[] }[] = [];
  streams: FakeStream[] = [];
  /** Answers GET /session/{id}/transcript; o is the page asked for (limit, pageToken). */
  transcriptImpl: (o?: { limit?: number; pageToken?: string }) => Promise<Transcript>;
  contextImpl: () => Promise<SessionContext>;
  statusImpl: () => Promise<SessionStatus>;
  continueImpl: (o?: { promptId?: string }) => Promise<ContinueOutcome> = () => new Promise(() => {});
  promptImpl: () => Promise<{ promptId: string; state: 'running'; eventEpoch: string; cursor: string }> = () =>
    Promise.resolve({ promptId: 'x', state: 'running', eventEpoch: EPOCH, cursor: cur(1) });
  /** PATCH /session/{id}: answers the session with the budget sent. */
  updateImpl: (body: SessionUpdate) => Promise<Session> = (body) => Promise.resolve(session(this.id, body.budget ? { budget: body.budget } : {}));
  sessionImpl: () => Promise<Session> = () => Promise.resolve(session(this.id));

  constructor(id: string, opts: { seq?: number; recovery?: RecoverySummary; transcript?: Partial<Transcript> } = {}) {
    this.id = id;
    const seq = opts.seq ?? 10;
    this.transcriptImpl = () => Promise.resolve(transcript(id, seq, opts.transcript));
    this.contextImpl = () => Promise.resolve(context(id, seq, opts.recovery ?? clean()));
    this.statusImpl = () => Promise.resolve(status(id));
  }
  #rec(name: string, ...args: unknown[]) {
    this.calls.push({ name, args });
  }
  count(name: string): number {
    return this.calls.filter((c) => c.name === name).length;
  }
  get stream(): FakeStream {
    return this.streams[this.streams.length - 1]!;
  }
  get() {
    this.#rec('get');
    return this.sessionImpl();
  }
  update(body: SessionUpdate) {
    this.#rec('update', body);
    return this.updateImpl(body);
  }
  transcript(o?: { signal?: AbortSignal; limit?: number; pageToken?: string }) {
    const page = { ...(o?.limit !== undefined ? { limit: o.limit } : {}), ...(o?.pageToken ? { pageToken: o.pageToken } : {}) };
    this.#rec('transcript', page);
    return this.transcriptImpl(page);
  }
  context() {
    this.#rec('context');
    return this.contextImpl();
  }
  status() {
    this.#rec('status');
    return this.statusImpl();
  }
  prompt(p: unknown, o?: unknown) {
    this.#rec('prompt', p, o);
    return this.promptImpl();
  }
  continue(o?: { promptId?: string }) {
    this.#rec('continue', o);
    return this.continueImpl(o);
  }
  cancel(o?: { keepQueue?: boolean }) {
    this.#rec('cancel', ...(o?.keepQueue ? [{ keepQueue: true }] : []));
    return Promise.resolve({ cancelled: true });
  }
  withdraw(promptId: string) {
    this.#rec('withdraw', promptId);
    return Promise.resolve({ promptId, state: 'cancelled', stopReason: 'withdrawn' });
  }
  resume() {
    this.#rec('resume');
    return Promise.resolve(status(this.id));
  }
  answerPermission(requestId: string, answer: unknown) {
    this.#rec('answerPermission', requestId, answer);
    return Promise.resolve({ id: requestId, sessionId: this.id, state: 'selected' as const, options: [], createdAt: '' });
  }
  events(opts: StreamOptions = {}) {
    this.#rec('events', opts.cursor);
    const s = new FakeStream(opts);
    this.streams.push(s);
    return s;
  }
  async setMode(modeId: string) {
    this.#rec('setMode', modeId);
    return { applied: true, context: { ...(await this.contextImpl()), currentMode: modeId } };
  }
  async setConfigOption(optionId: string, value: string | boolean) {
    this.#rec('setConfigOption', optionId, value);
    return { applied: true, context: await this.contextImpl() };
  }
}

/** Lets pending promise callbacks run. */
export async function flush(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 0));
}

// ---------------------------------------------------------------- inbox

/** A permission item of GET /inbox: allow always, allow once, reject. */
export function permissionItem(sid = 's1', rid = 'r1', at = '2026-01-01T00:00:10Z'): InboxItem {
  return {
    id: `permission:${sid}:${rid}`,
    kind: 'permission',
    at,
    session: session(sid, { title: `Session ${sid}` }),
    permission: {
      id: rid,
      sessionId: sid,
      title: 'Edit demo.txt',
      state: 'pending',
      createdAt: at,
      options: [
        { optionId: 'always', name: 'Allow always', kind: 'allow_always' },
        { optionId: 'once', name: 'Allow once', kind: 'allow_once' },
        { optionId: 'no', name: 'Reject', kind: 'reject_once' },
      ],
    },
  };
}

/** An interrupted or failed turn item of GET /inbox. */
export function turnItem(kind: 'interrupted_turn' | 'failed_turn', sid = 's2', at = '2026-01-01T00:00:05Z'): InboxItem {
  return {
    id: `${kind}:${sid}:p1`,
    kind,
    at,
    session: session(sid, { title: `Session ${sid}` }),
    turn: {
      promptId: 'p1',
      kind: 'prompt',
      state: kind === 'failed_turn' ? 'failed' : 'interrupted',
      createdAt: at,
      ...(kind === 'failed_turn' ? { error: { code: 'agent_error', message: 'model overloaded' } } : { interruptReason: 'agent_exited' }),
    },
  };
}

/** A turn a budget stopped (budget_exceeded) of GET /inbox. */
export function budgetItem(sid = 's6', message = 'the session used 1080 tokens of its budget of 1000', at = '2026-01-01T00:00:06Z'): InboxItem {
  return {
    id: `budget_exceeded:${sid}:p1`,
    kind: 'budget_exceeded',
    at,
    session: session(sid, { title: `Session ${sid}`, budget: { maxTokens: 1000 } }),
    turn: { promptId: 'p1', kind: 'prompt', state: 'cancelled', createdAt: at, error: { code: 'budget_exceeded', message } },
  };
}

/** A running turn that stalled at stalledAt (stalled_turn) of GET /inbox; the session's stall limit is budget.stallSeconds. */
export function stalledItem(sid = 's7', stalledAt = new Date().toISOString(), budget: Budget = { stallSeconds: 60 }): InboxItem {
  return {
    id: `stalled_turn:${sid}:p1`,
    kind: 'stalled_turn',
    at: stalledAt,
    session: session(sid, { title: `Session ${sid}`, budget }),
    turn: { promptId: 'p1', kind: 'prompt', state: 'running', createdAt: stalledAt, stalledAt },
  };
}
