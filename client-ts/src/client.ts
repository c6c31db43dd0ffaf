import { createClient, createConfig, type Client } from './gen/client/index.js';
import * as sdk from './gen/sdk.gen.js';
import type {
  AgentList,
  AvailableCommand,
  CancelResult,
  ContentBlock,
  ContinueAccepted,
  ExecutorHostList,
  ForkRequest,
  Health,
  InboxList,
  ListInboxData,
  ListSessionsData,
  OptionChangeResult,
  PermissionRequest,
  PromptAccepted,
  PromptRequest,
  RecoverySummary,
  RewindResult,
  Session,
  SessionContext,
  SessionCreate,
  SessionList,
  SessionStatus,
  SessionUpdate,
  StreamGlobalEventsData,
  StreamSessionEventsData,
  StreamTicket,
  StreamTicketRequest,
  Task,
  TaskCreate,
  TaskList,
  TaskPatch,
  Transcript,
  Turn,
} from './gen/types.gen.js';
import { TetherError, TetherNetworkError, TetherProblem, TetherTimeoutError } from './errors.js';
import { API_VERSION, apiCompatible, TetherVersionError } from './version.js';
import { WorkspaceClient } from './workspace.js';
import { TerminalClient } from './terminal.js';
import {
  EventStream,
  isTurnTerminalEvent,
  TURN_TERMINAL_EVENT_TYPES,
  type EventStreamOptions,
  type TurnTerminalEvent,
} from './events.js';

export interface TetherClientOptions {
  /** The daemon's base URL, e.g. `http://127.0.0.1:7777`. */
  baseUrl: string;
  /** The bearer token (`<data-dir>/token`). */
  token: string;
  /** A fetch implementation; default `globalThis.fetch` (looked up at call time). */
  fetch?: typeof fetch;
  /** Per-request timeout for non-streaming calls. Default 30 000 ms; 0 disables. */
  timeoutMs?: number;
  /** Defaults for every event stream this client opens (backoff, idle timeout, ...). */
  streamDefaults?: Omit<EventStreamOptions, 'cursor' | 'types' | 'follow' | 'signal' | 'onStateChange'>;
}

/** Per-call options of every non-streaming method. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Overrides the client's timeoutMs for this call. */
  timeoutMs?: number;
}

/** Which page of a transcript to read (`SessionHandle.transcript`). */
export interface TranscriptPageOptions {
  /** Turns per page, 1..500, the latest first; without it, the whole transcript. */
  limit?: number;
  /** A page's `nextPageToken`: the page of turns before it. */
  pageToken?: string;
}

export interface PromptOptions extends CallOptions {
  /** Client-chosen turn id; repeating it is idempotent. */
  promptId?: string;
  /** What to do when a turn is already running. Default `enqueue`. */
  multitask?: 'enqueue' | 'reject';
}

export interface ContinueOptions extends CallOptions {
  /** Idempotency key: retrying with the same promptId returns the same accepted turn. */
  promptId?: string;
}

/**
 * The outcome of `SessionClient.continue()`:
 * - `accepted`: a continuation turn was admitted;
 * - `declined`: the daemon refused (409) with a reason and the current recovery plan;
 * - `unknown`: the request failed ambiguously (network error, timeout,
 *   abort, 5xx): the continuation may or may not have been admitted. The
 *   SDK never retries on its own; a retry is safe (returns the same turn)
 *   only when a promptId was given, which `retrySafe` says.
 */
export type ContinueOutcome =
  | {
      kind: 'accepted';
      promptId: string;
      state?: string;
      interruption: RecoverySummary;
      /** May be absent from an older daemon. */
      eventEpoch?: string;
      cursor?: string;
    }
  | { kind: 'declined'; reason: string; recovery?: RecoverySummary; problem: TetherProblem }
  | { kind: 'unknown'; error: unknown; retrySafe: boolean };

export interface SessionEventsOptions extends EventStreamOptions {}

export interface GlobalEventsOptions extends EventStreamOptions {
  /** Only events of this task's sessions. */
  taskId?: string;
}

/** The stream a native EventSource opens: a session's (`sessionId`) or the global one. */
export interface NativeStreamTarget {
  sessionId?: string;
  /** Global stream only: events of this task's sessions. */
  taskId?: string;
  types?: string[];
  /** Start after this cursor (e.g. the last `lastEventId` of a previous EventSource). */
  cursor?: string;
}

export interface NativeEventSourceOptions extends CallOptions {
  /** The EventSource constructor; default `globalThis.EventSource`. */
  EventSource?: typeof EventSource;
}

export interface WaitForTurnOptions {
  signal?: AbortSignal;
  /** Read from this cursor; default the beginning of the session's log. */
  cursor?: string;
}

type GenResult<T> = ({ data: T; error: undefined } | { data: undefined; error: unknown }) & {
  response: Response;
};

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

function errMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

function queryString(q: Record<string, string | boolean | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined) p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

function toBlocks(prompt: ContentBlock[] | string): ContentBlock[] {
  return typeof prompt === 'string' ? [{ type: 'text', text: prompt }] : prompt;
}

const TERMINAL_TURN_STATES = new Set(['completed', 'failed', 'cancelled', 'interrupted']);

/**
 * The terminal event a transcript's turn implies, for when the event itself
 * is no longer in the log (resync after a history rewrite). It has no id.
 */
function terminalEventFromTurn(sessionId: string, turn: Turn): TurnTerminalEvent {
  const common = {
    sessionId,
    promptId: turn.promptId,
    state: turn.state,
    ...(turn.endedAt !== undefined ? { endedAt: turn.endedAt } : {}),
  };
  switch (turn.state) {
    case 'failed':
      return {
        type: 'turn.failed',
        data: { ...common, code: turn.error?.code ?? 'unknown', message: turn.error?.message ?? '' },
      };
    case 'cancelled':
      return {
        type: 'turn.cancelled',
        data: { ...common, ...(turn.stopReason !== undefined ? { stopReason: turn.stopReason } : {}) },
      };
    case 'interrupted':
      return {
        type: 'turn.interrupted',
        data: {
          ...common,
          reason: turn.interruptReason ?? 'unknown',
          danglingToolCalls: [],
          ...(turn.exitCode !== undefined ? { exitCode: turn.exitCode } : {}),
          ...(turn.exitSignal !== undefined ? { exitSignal: turn.exitSignal } : {}),
        },
      };
    default:
      return {
        type: 'turn.completed',
        data: { ...common, ...(turn.stopReason !== undefined ? { stopReason: turn.stopReason } : {}) },
      };
  }
}

/**
 * The entry point: base URL, bearer token, fetch, timeouts; typed
 * problem+json errors (`TetherProblem`) for every non-2xx answer.
 */
export class TetherClient {
  /** The daemon's base URL without a trailing slash. */
  readonly baseUrl: string;
  /**
   * The generated client, configured with the base URL, token and fetch:
   * pass it as `client` to any generated operation (`sdk.getTurn({client: c.gen, ...})`).
   */
  readonly gen: Client;
  readonly timeoutMs: number;
  #token: string;
  #fetch: typeof fetch;
  #streamDefaults: TetherClientOptions['streamDefaults'];

  constructor(opts: TetherClientOptions) {
    if (!opts || typeof opts.baseUrl !== 'string' || opts.baseUrl === '') {
      throw new TypeError('TetherClient: baseUrl is required');
    }
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    const custom = opts.fetch;
    // Called unbound, so a browser's window.fetch is never invoked on another `this`.
    this.#fetch = (input, init) => (custom ?? globalThis.fetch)(input, init);
    this.#streamDefaults = opts.streamDefaults;
    this.gen = createClient(
      createConfig({
        baseUrl: this.baseUrl,
        fetch: this.#fetch,
        auth: () => this.#token,
      }),
    );
  }

  /**
   * Creates a client and checks that the daemon speaks this SDK's API
   * version (GET /health `apiVersion` against API_VERSION): resolves with
   * the client, or rejects with TetherVersionError naming both versions
   * (TetherNetworkError / TetherTimeoutError when the daemon is not there).
   * `new TetherClient()` makes no request and checks nothing.
   */
  static async connect(opts: TetherClientOptions, o?: CallOptions): Promise<TetherClient> {
    const c = new TetherClient(opts);
    await c.checkVersion(o);
    return c;
  }

  /** GET /health and throw TetherVersionError unless the daemon's apiVersion is compatible. */
  async checkVersion(o?: CallOptions): Promise<Health> {
    const h = await this.health(o);
    const daemonApi = typeof h.apiVersion === 'string' ? h.apiVersion : '';
    if (!apiCompatible(API_VERSION, daemonApi)) throw new TetherVersionError(daemonApi, h.version ?? '');
    return h;
  }

  /** A client bound to one session id (no request is made). */
  session(id: string): SessionClient {
    return new SessionClient(this, id);
  }

  /**
   * Runs one generated operation with the client's timeout and the
   * caller's signal. Network failures become TetherNetworkError, timeouts
   * TetherTimeoutError, a caller abort rethrows the signal's reason; HTTP
   * errors are returned (see `call` for the throwing variant).
   * @internal
   */
  async send<T>(op: (signal: AbortSignal) => Promise<GenResult<T>>, o?: CallOptions): Promise<GenResult<T>> {
    const timeoutMs = o?.timeoutMs ?? this.timeoutMs;
    const outer = o?.signal;
    if (outer?.aborted) throw abortReason(outer);
    const ctl = new AbortController();
    let timedOut = false;
    const onAbort = () => ctl.abort(outer ? abortReason(outer) : undefined);
    outer?.addEventListener('abort', onAbort, { once: true });
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            timedOut = true;
            ctl.abort(new TetherTimeoutError(timeoutMs));
          }, timeoutMs)
        : undefined;
    try {
      const r = await op(ctl.signal);
      if (r.response === undefined) throw r.error ?? new Error('request failed');
      return r;
    } catch (err) {
      if (timedOut) throw new TetherTimeoutError(timeoutMs);
      if (outer?.aborted) throw abortReason(outer);
      if (err instanceof TetherError) throw err;
      throw new TetherNetworkError(`request failed: ${errMessage(err)}`, { cause: err });
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    }
  }

  /** `send`, then a TetherProblem for any non-2xx. @internal */
  async call<T>(op: (signal: AbortSignal) => Promise<GenResult<T>>, o?: CallOptions): Promise<T> {
    const r = await this.send(op, o);
    if (!r.response.ok) throw new TetherProblem(r.response.status, r.error);
    return r.data as T;
  }

  /** The Authorization header of this client's requests. @internal */
  authHeaders(): Record<string, string> {
    return { Authorization: `Bearer ${this.#token}` };
  }

  /** Opens an event stream on a path of this daemon. @internal */
  stream(path: string, query: Record<string, string | boolean | undefined>, kind: 'session' | 'global', opts: EventStreamOptions): EventStream {
    return new EventStream(
      {
        url: `${this.baseUrl}${path}${queryString(query)}`,
        headers: () => ({ Authorization: `Bearer ${this.#token}` }),
        fetch: this.#fetch,
        kind,
      },
      { ...this.#streamDefaults, ...opts },
    );
  }

  /** GET /health (no token needed). */
  health(o?: CallOptions): Promise<Health> {
    return this.call((signal) => sdk.getHealth({ client: this.gen, signal }), o);
  }

  /**
   * POST /session: start a session with an agent profile in a working
   * directory. Throws a `TetherProblem` with code `agent_auth_required`
   * (409; `body.authMethods` carry a `hint` each) when the profile's agent
   * asked for credentials again, checked just now; the answer's
   * `credentials` says what is known otherwise (see `AgentProfile.credentials`).
   */
  createSession(body: SessionCreate, o?: CallOptions): Promise<Session> {
    return this.call((signal) => sdk.createSession({ client: this.gen, body, signal }), o);
  }

  /**
   * GET /sessions, newest first, paginated. `cursor` is the global cursor
   * the page is consistent with: `globalEvents({ cursor })` continues it.
   */
  listSessions(params?: ListSessionsData['query'], o?: CallOptions): Promise<SessionList> {
    return this.call(
      (signal) => sdk.listSessions({ client: this.gen, ...(params ? { query: params } : {}), signal }),
      o,
    );
  }

  /**
   * GET /inbox: what waits for a person across all sessions (pending
   * permissions, interrupted and failed turns, agents that need
   * credentials), newest first, paginated. Answer a permission item with
   * `session(item.session.id).answerPermission(item.permission.id, …)`.
   * `cursor` is the global cursor the page is consistent with; the
   * global stream's `permission.*`, `turn.*` and `session.*` events say
   * when to read it again.
   */
  listInbox(params?: ListInboxData['query'], o?: CallOptions): Promise<InboxList> {
    return this.call(
      (signal) => sdk.listInbox({ client: this.gen, ...(params ? { query: params } : {}), signal }),
      o,
    );
  }

  /** GET /session/{id}. */
  getSession(id: string, o?: CallOptions): Promise<Session> {
    return this.call((signal) => sdk.getSession({ client: this.gen, path: { id }, signal }), o);
  }

  /**
   * PATCH /session/{id}: rename the session (the user's title replaces the
   * agent's and the first prompt's) or archive it (left out of
   * `listSessions()` unless `archived: true`), a closed session too; or set
   * its budget, whole (`budget`: maxTokens, maxCost, maxTurnSeconds,
   * stallSeconds; an open session only). A budget its usage has reached
   * stops the running turn; one raised above it lets `continue` go on.
   */
  updateSession(id: string, body: SessionUpdate, o?: CallOptions): Promise<Session> {
    return this.call((signal) => sdk.updateSession({ client: this.gen, path: { id }, body, signal }), o);
  }

  /** GET /tasks, with the global cursor the list is consistent with (stream `globalEvents({ cursor })` from it). */
  listTasks(o?: CallOptions): Promise<TaskList> {
    return this.call((signal) => sdk.listTasks({ client: this.gen, signal }), o);
  }

  /** POST /tasks. */
  createTask(body: TaskCreate, o?: CallOptions): Promise<Task> {
    return this.call((signal) => sdk.createTask({ client: this.gen, body, signal }), o);
  }

  /** GET /tasks/{id}. */
  getTask(id: string, o?: CallOptions): Promise<Task> {
    return this.call((signal) => sdk.getTask({ client: this.gen, path: { id }, signal }), o);
  }

  /** PATCH /tasks/{id}: rename a task or set its state. */
  updateTask(id: string, body: TaskPatch, o?: CallOptions): Promise<Task> {
    return this.call((signal) => sdk.updateTask({ client: this.gen, path: { id }, body, signal }), o);
  }

  /** GET /agents. */
  listAgents(o?: CallOptions): Promise<AgentList> {
    return this.call((signal) => sdk.listAgents({ client: this.gen, signal }), o);
  }

  /**
   * GET /executors: the executor hosts this daemon knows (the local
   * detached host once used, every configured remote host) and their state.
   */
  listExecutors(o?: CallOptions): Promise<ExecutorHostList> {
    return this.call((signal) => sdk.listExecutors({ client: this.gen, signal }), o);
  }

  /** POST /events/tickets: a short-lived ticket that opens one event stream without the token. */
  createStreamTicket(body: StreamTicketRequest = {}, o?: CallOptions): Promise<StreamTicket> {
    return this.call((signal) => sdk.createStreamTicket({ client: this.gen, body, signal }), o);
  }

  /**
   * Opens a browser's native `EventSource` on a stream, authenticated by a
   * fresh stream ticket: the token goes only in the ticket request's
   * Authorization header, never in a URL. The EventSource reconnects by
   * itself (with `Last-Event-ID`) while the ticket lives
   * (`--stream-ticket-ttl`); once it closes for good (`readyState`
   * CLOSED: the ticket expired, or the session's log is complete), call
   * this again with `cursor` set to the last event's `lastEventId`.
   * Cross-origin pages need their origin in the daemon's `--cors-origins`.
   */
  async openEventSource(target: NativeStreamTarget = {}, o: NativeEventSourceOptions = {}): Promise<EventSource> {
    const { EventSource: ctor = globalThis.EventSource, ...call } = o;
    if (typeof ctor !== 'function') throw new TypeError('openEventSource: no EventSource in this environment');
    const body: StreamTicketRequest = {};
    if (target.sessionId !== undefined) body.sessionId = target.sessionId;
    if (target.taskId !== undefined) body.taskId = target.taskId;
    if (target.types && target.types.length > 0) body.types = target.types.join(',');
    if (target.cursor) body.cursor = target.cursor;
    const ticket = await this.createStreamTicket(body, call);
    return new ctor(`${this.baseUrl}${ticket.url}`);
  }

  /**
   * GET /events: the global stream (session and task changes). Pass the
   * `cursor` of `listTasks()`/`listSessions()` (the earliest, see
   * `earliestCursor`) to get the changes after the lists, not the whole log.
   */
  globalEvents(opts: GlobalEventsOptions = {}): EventStream {
    const { taskId, ...rest } = opts;
    const query: NonNullable<StreamGlobalEventsData['query']> = {};
    if (opts.types && opts.types.length > 0) query.types = opts.types.join(',');
    if (opts.follow === false) query.follow = false;
    if (taskId !== undefined) query.taskId = taskId;
    return this.stream('/events', query, 'global', rest);
  }
}

/** Operations on one session, bound to its id. */
export class SessionClient {
  readonly id: string;
  readonly client: TetherClient;

  constructor(client: TetherClient, id: string) {
    this.client = client;
    this.id = id;
  }

  get #gen(): Client {
    return this.client.gen;
  }

  /** The session's workspace: files and git state, with or without the agent. */
  get workspace(): WorkspaceClient {
    return new WorkspaceClient(this.client, this.id);
  }

  /** The session's interactive terminals on its executor. */
  get terminals(): TerminalClient {
    return new TerminalClient(this.client, this.id);
  }

  /** GET /session/{id}. */
  get(o?: CallOptions): Promise<Session> {
    return this.client.getSession(this.id, o);
  }

  /** POST /session/{id}/prompt: runs now or is queued; a string becomes one text block. */
  prompt(prompt: ContentBlock[] | string, opts: PromptOptions = {}): Promise<PromptAccepted> {
    const body: PromptRequest = { prompt: toBlocks(prompt) };
    if (opts.promptId !== undefined) body.promptId = opts.promptId;
    if (opts.multitask !== undefined) body.multitask = opts.multitask;
    return this.client.call(
      (signal) => sdk.promptSession({ client: this.#gen, path: { id: this.id }, body, signal }),
      opts,
    );
  }

  /**
   * POST /session/{id}/continue. Never throws for a decline (409) or an
   * ambiguous failure; throws TetherProblem for other 4xx answers (unknown
   * session, bad promptId, no token), which are definite failures.
   */
  async continue(opts: ContinueOptions = {}): Promise<ContinueOutcome> {
    const retrySafe = opts.promptId !== undefined;
    let r: GenResult<ContinueAccepted>;
    try {
      r = await this.client.send(
        (signal) =>
          sdk.continueSession({
            client: this.#gen,
            path: { id: this.id },
            ...(opts.promptId !== undefined ? { body: { promptId: opts.promptId } } : {}),
            signal,
          }),
        opts,
      );
    } catch (error) {
      return { kind: 'unknown', error, retrySafe };
    }
    const status = r.response.status;
    if (r.response.ok && r.data !== undefined) {
      const d = r.data;
      const out: ContinueOutcome = { kind: 'accepted', promptId: d.promptId, interruption: d.interruption };
      if (d.state !== undefined) out.state = d.state;
      if (d.eventEpoch !== undefined && d.eventEpoch !== '') out.eventEpoch = d.eventEpoch;
      if (d.cursor !== undefined && d.cursor !== '') out.cursor = d.cursor;
      return out;
    }
    const problem = new TetherProblem(status, r.error);
    if (status === 409) {
      const out: ContinueOutcome = { kind: 'declined', reason: problem.reason ?? problem.code, problem };
      const rec = problem.recovery;
      if (rec !== undefined) out.recovery = rec;
      return out;
    }
    if (status >= 500 || status === 408 || status === 429) return { kind: 'unknown', error: problem, retrySafe };
    throw problem;
  }

  /**
   * POST /session/{id}/cancel: cancels the running turn and pending
   * permissions, and drops the queued turns unless `keepQueue`.
   */
  cancel(o?: CallOptions & { keepQueue?: boolean }): Promise<CancelResult> {
    const query = o?.keepQueue ? { keepQueue: true } : undefined;
    return this.client.call((signal) => sdk.cancelSession({ client: this.#gen, path: { id: this.id }, ...(query ? { query } : {}), signal }), o);
  }

  /**
   * POST /session/{id}/fork: a new session of the same task from turn
   * `atTurn` (default the latest that ended), with its transcript and that
   * turn's files in a new worktree (or `cwd`, a new or empty directory);
   * `agentProfileId` another agent. Resolves to the fork (docs/rewind.md).
   */
  fork(body: ForkRequest = {}, o?: CallOptions): Promise<Session> {
    return this.client.call((signal) => sdk.forkSession({ client: this.#gen, path: { id: this.id }, body, signal }), o);
  }

  /**
   * POST /session/{id}/handoff: a new session with `agentProfileId` that
   * continues the latest turn in the same directory, briefed once with the
   * transcript.
   */
  handoff(agentProfileId: string, o?: CallOptions & { title?: string }): Promise<Session> {
    const body = o?.title !== undefined ? { agentProfileId, title: o.title } : { agentProfileId };
    return this.client.call((signal) => sdk.handoffSession({ client: this.#gen, path: { id: this.id }, body, signal }), o);
  }

  /**
   * POST /session/{id}/rewind: the files go back to the end of `toTurn`
   * (after a safety checkpoint), the later turns are marked rewound. With
   * `dryRun` nothing changes: the answer lists what would, and which of
   * those files were changed outside any turn (`userChanged`).
   */
  rewind(toTurn: string, o?: CallOptions & { dryRun?: boolean }): Promise<RewindResult> {
    const query = o?.dryRun ? { dryRun: true } : undefined;
    return this.client.call(
      (signal) => sdk.rewindSession({ client: this.#gen, path: { id: this.id }, body: { toTurn }, ...(query ? { query } : {}), signal }),
      o,
    );
  }

  /** POST /session/{id}/rewind/undo: undoes the last rewind (or undo). */
  undoRewind(o?: CallOptions): Promise<RewindResult> {
    return this.client.call((signal) => sdk.undoRewind({ client: this.#gen, path: { id: this.id }, signal }), o);
  }

  /** DELETE /session/{id}: closes the session (idempotent). */
  close(o?: CallOptions): Promise<Session> {
    return this.client.call((signal) => sdk.closeSession({ client: this.#gen, path: { id: this.id }, signal }), o);
  }

  /** POST /session/{id}/resume: restores the agent and waits until it is ready. */
  resume(o?: CallOptions): Promise<SessionStatus> {
    return this.client.call((signal) => sdk.resumeSession({ client: this.#gen, path: { id: this.id }, signal }), o);
  }

  /** GET /session/{id}/status. */
  status(o?: CallOptions): Promise<SessionStatus> {
    return this.client.call((signal) => sdk.getSessionStatus({ client: this.#gen, path: { id: this.id }, signal }), o);
  }

  /** GET /session/{id}/context: state, recovery plan and the cursor it is consistent with. */
  context(o?: CallOptions): Promise<SessionContext> {
    return this.client.call((signal) => sdk.getSessionContext({ client: this.#gen, path: { id: this.id }, signal }), o);
  }

  /**
   * The slash commands the agent announced (from the context; [] until it
   * announced any). Send one as a prompt: `/${name} ${input}`. Live changes
   * come as `session.options_changed` events (`availableCommands`).
   */
  async commands(o?: CallOptions): Promise<AvailableCommand[]> {
    return (await this.context(o)).availableCommands ?? [];
  }

  /**
   * PUT /session/{id}/mode (ACP session/set_mode). `applied: false` means no
   * agent runs: the choice is stored and applied at the next start. Throws
   * TetherProblem `unknown_mode` for a mode the agent did not announce.
   */
  setMode(modeId: string, o?: CallOptions): Promise<OptionChangeResult> {
    return this.client.call(
      (signal) => sdk.setSessionMode({ client: this.#gen, path: { id: this.id }, body: { modeId }, signal }),
      o,
    );
  }

  /**
   * PUT /session/{id}/config/{optionId} (ACP session/set_config_option):
   * a value id of a select option, or a boolean. Applied or stored like setMode.
   */
  setConfigOption(optionId: string, value: string | boolean, o?: CallOptions): Promise<OptionChangeResult> {
    return this.client.call(
      (signal) =>
        sdk.setSessionConfigOption({ client: this.#gen, path: { id: this.id, optionId }, body: { value }, signal }),
      o,
    );
  }

  /**
   * GET /session/{id}/transcript: the snapshot and the cursor to stream
   * from. With `limit`, one page: the latest `limit` turns (or those before
   * `pageToken`, a page's `nextPageToken`) with their messages and tool
   * calls; without it, every turn, which for a long session is megabytes.
   */
  transcript(o?: CallOptions & TranscriptPageOptions): Promise<Transcript> {
    const query = o?.limit !== undefined ? { limit: o.limit, ...(o.pageToken ? { pageToken: o.pageToken } : {}) } : undefined;
    return this.client.call((signal) => sdk.getTranscript({ client: this.#gen, path: { id: this.id }, ...(query ? { query } : {}), signal }), o);
  }

  /**
   * The transcript a page of `limit` turns at a time, the latest first,
   * back to the session's first turn: render the first page, and ask for
   * the next as the reader scrolls back. Each page's `cursor` is the head
   * when it was read; stream from the first page's.
   */
  async *transcriptPages(limit: number, o?: CallOptions): AsyncGenerator<Transcript, void, undefined> {
    let pageToken: string | undefined;
    do {
      const page: Transcript = await this.transcript({ ...o, limit, ...(pageToken ? { pageToken } : {}) });
      yield page;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /** GET /session/{id}/turns/{promptId}. */
  turn(promptId: string, o?: CallOptions): Promise<Turn> {
    return this.client.call((signal) => sdk.getTurn({ client: this.#gen, path: { id: this.id, promptId }, signal }), o);
  }

  /**
   * DELETE /session/{id}/turns/{promptId}: withdraws a queued prompt before it
   * reaches the agent (409 `turn_not_queued` once it runs or ended).
   */
  withdraw(promptId: string, o?: CallOptions): Promise<Turn> {
    return this.client.call((signal) => sdk.withdrawTurn({ client: this.#gen, path: { id: this.id, promptId }, signal }), o);
  }

  /** GET /session/{id}/history.jsonl as text. */
  history(o?: CallOptions): Promise<string> {
    return this.client.call(
      (signal) => sdk.exportHistory({ client: this.#gen, path: { id: this.id }, parseAs: 'text', signal }),
      o,
    );
  }

  /** POST /session/{id}/permission/{requestId}. */
  answerPermission(
    requestId: string,
    answer: { optionId: string } | { outcome: 'cancelled' },
    o?: CallOptions,
  ): Promise<PermissionRequest> {
    return this.client.call(
      (signal) =>
        sdk.answerPermission({ client: this.#gen, path: { id: this.id, requestId }, body: answer, signal }),
      o,
    );
  }

  /** GET /session/{id}/events as a resumable typed stream. */
  events(opts: SessionEventsOptions = {}): EventStream {
    const query: NonNullable<StreamSessionEventsData['query']> = {};
    if (opts.types && opts.types.length > 0) query.types = opts.types.join(',');
    if (opts.follow === false) query.follow = false;
    return this.client.stream(`/session/${encodeURIComponent(this.id)}/events`, query, 'session', opts);
  }

  /**
   * Resolves with the terminal event (turn.completed | failed | cancelled |
   * interrupted) carrying `promptId`, also when it happened already: it
   * reads from `opts.cursor` or from the beginning of the log. After a
   * resync it reads the head and then the turn (and, if the turn had
   * ended, resolves with an event built from it, without `id`).
   */
  async waitForTurn(promptId: string, opts: WaitForTurnOptions = {}): Promise<TurnTerminalEvent> {
    const { signal } = opts;
    if (signal?.aborted) throw abortReason(signal);
    const stream = this.events({
      types: TURN_TERMINAL_EVENT_TYPES,
      ...(opts.cursor !== undefined ? { cursor: opts.cursor } : {}),
      ...(signal ? { signal } : {}),
    });
    try {
      for await (const ev of stream) {
        if (isTurnTerminalEvent(ev) && ev.data.promptId === promptId) return ev;
        if (ev.type === 'resync_required') {
          // The head first, then the turn: a turn that ended before the
          // head shows it, one that ends after is on the stream from it. A
          // one-turn page is the head without the whole history.
          const t = await this.transcript({ ...(signal ? { signal } : {}), limit: 1 });
          const turn = await this.turn(promptId, signal ? { signal } : undefined);
          if (TERMINAL_TURN_STATES.has(turn.state)) return terminalEventFromTurn(this.id, turn);
          stream.resyncFrom(t.cursor);
        }
      }
    } finally {
      stream.close();
    }
    if (signal?.aborted) throw abortReason(signal);
    throw new TetherError(`the event stream of session ${this.id} ended before turn ${promptId} finished`);
  }
}
