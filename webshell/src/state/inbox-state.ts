// The inbox: what waits for a person across all sessions (GET /inbox,
// docs/inbox.md), newest first. A reducer plus a small controller.
//
// Kept live by reading the list again, not by patching it from events: the
// daemon derives the inbox from its projections (pending permissions, the
// latest turns, the executors), and an event says only that it may have
// changed. The global stream (TasksController's, shared by the tabs) tells
// when: a relevant event or a reconnect schedules a read, debounced, so a
// burst (a turn ending with its permission cancelled) costs one request.
import { errorCode, errorStatus, errorText, isUnauthorized } from '../lib/errors';
import { parsePosition } from './cursor';
import { createStore, type Store } from './store';
import type { GlobalFeed } from './tasks-state';
import type { ContinueOutcome, InboxItem, InboxList, StreamState, TetherEvent } from './types';

export type InboxKind = InboxItem['kind'];

export interface InboxState {
  /** The first page, newest first, without the items this tab just dealt with. */
  items: InboxItem[];
  /** More items wait beyond the first page. */
  more: boolean;
  /** The global cursor the list is consistent with. */
  cursor?: string;
  loaded: boolean;
  error?: string;
  /**
   * Items answered or continued here, left out until a list without them
   * arrives: a read that began before the answer must not bring them back.
   */
  hidden: Record<string, true>;
  /** Items whose answer or continuation is on its way. */
  busy: Record<string, true>;
  /** Why an item's action failed, by item id. */
  failed: Record<string, string>;
}

export type InboxAction =
  | { type: 'list'; list: InboxList }
  | { type: 'error'; error?: string }
  | { type: 'busy'; id: string }
  | { type: 'done'; id: string }
  | { type: 'failed'; id: string; error: string };

export function initialInboxState(): InboxState {
  return { items: [], more: false, loaded: false, hidden: {}, busy: {}, failed: {} };
}

/** Is cursor a older than b (same epoch)? A list of another epoch is never older. */
function older(a: string | undefined, b: string | undefined): boolean {
  const pa = parsePosition(a);
  const pb = parsePosition(b);
  return !!pa && !!pb && pa.epoch === pb.epoch && pa.seq < pb.seq;
}

function without<T>(m: Record<string, T>, id: string): Record<string, T> {
  if (!(id in m)) return m;
  const out = { ...m };
  delete out[id];
  return out;
}

export function inboxReducer(s: InboxState, a: InboxAction): InboxState {
  switch (a.type) {
    case 'list': {
      // Reads answer out of order: an older snapshot never replaces a newer one.
      if (older(a.list.cursor, s.cursor)) return s;
      const listed = new Set(a.list.items.map((i) => i.id));
      const hidden: Record<string, true> = {};
      for (const id of Object.keys(s.hidden)) if (listed.has(id)) hidden[id] = true;
      const failed: Record<string, string> = {};
      for (const [id, e] of Object.entries(s.failed)) if (listed.has(id)) failed[id] = e;
      return {
        ...s,
        items: a.list.items.filter((i) => !hidden[i.id]),
        more: !!a.list.nextPageToken,
        cursor: a.list.cursor,
        loaded: true,
        error: undefined,
        hidden,
        failed,
      };
    }
    case 'error':
      return { ...s, error: a.error };
    case 'busy':
      return { ...s, busy: { ...s.busy, [a.id]: true }, failed: without(s.failed, a.id) };
    case 'done':
      return { ...s, items: s.items.filter((i) => i.id !== a.id), hidden: { ...s.hidden, [a.id]: true }, busy: without(s.busy, a.id) };
    case 'failed':
      return { ...s, busy: without(s.busy, a.id), failed: { ...s.failed, [a.id]: a.error } };
  }
}

/** The events of the global stream that may change the inbox (docs/inbox.md). */
export const INBOX_EVENTS = new Set([
  'permission.requested',
  'permission.resolved',
  'turn.started',
  'turn.completed',
  'turn.failed',
  'turn.cancelled',
  'turn.interrupted',
  // A running turn went silent past its stallSeconds, or was heard from again.
  'turn.stalled',
  'turn.stall_ended',
  // A budget stopped a turn (its turn.cancelled follows).
  'budget.exceeded',
  'session.executor_status',
  'session.closed',
  'session.archived',
  'resync_required',
]);

export interface InboxApi {
  listInbox(params: { limit?: number; pageToken?: string }): Promise<InboxList>;
  answerPermission(sessionId: string, requestId: string, optionId: string): Promise<unknown>;
  continueTurn(sessionId: string): Promise<ContinueOutcome>;
  /** Cancels the session's running turn (POST /session/{id}/cancel). */
  cancelTurn(sessionId: string): Promise<unknown>;
}

/** The first page only: what a person can get through; `more` says there is more. */
export const INBOX_LIMIT = 200;

export class InboxController {
  readonly store: Store<InboxState, InboxAction> = createStore(inboxReducer, initialInboxState());
  #api: InboxApi;
  #debounceMs: number;
  #onUnauthorized: (() => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #unsubscribe: (() => void)[] = [];
  #disposed = false;

  constructor(api: InboxApi, opts: { debounceMs?: number; onUnauthorized?: () => void } = {}) {
    this.#api = api;
    this.#debounceMs = opts.debounceMs ?? 150;
    this.#onUnauthorized = opts.onUnauthorized;
  }

  /** Reads the inbox now and again whenever feed says it may have changed. */
  start(feed?: Pick<GlobalFeed, 'onEvent' | 'onConnection'>): void {
    if (feed) {
      this.#unsubscribe.push(
        feed.onEvent((ev) => this.hear(ev)),
        feed.onConnection((st, prev) => this.connection(st, prev)),
      );
    }
    void this.refresh();
  }

  dispose(): void {
    this.#disposed = true;
    clearTimeout(this.#timer);
    for (const u of this.#unsubscribe) u();
  }

  /** An event of the global stream: read again if it may change the inbox. */
  hear(ev: TetherEvent): void {
    if (INBOX_EVENTS.has(ev.type)) this.schedule();
  }

  /** The stream is back: what changed while it was away is not known, so read again. */
  connection(state: StreamState, prev: StreamState): void {
    if (state === 'open' && prev !== 'open') this.schedule();
  }

  /** A read after the debounce; events meanwhile join it. */
  schedule(): void {
    if (this.#disposed || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.refresh();
    }, this.#debounceMs);
  }

  async refresh(): Promise<void> {
    try {
      const list = await this.#api.listInbox({ limit: INBOX_LIMIT });
      if (!this.#disposed) this.store.dispatch({ type: 'list', list });
    } catch (e) {
      if (isUnauthorized(e)) this.#onUnauthorized?.();
      else if (!this.#disposed) this.store.dispatch({ type: 'error', error: errorText(e) });
    }
  }

  /** Answers a permission item; the first answer wins, and a lost race is no error. */
  async answer(item: InboxItem, optionId: string): Promise<void> {
    const p = item.permission;
    if (!p) return;
    this.store.dispatch({ type: 'busy', id: item.id });
    try {
      await this.#api.answerPermission(item.session.id, p.id, optionId);
      this.store.dispatch({ type: 'done', id: item.id });
    } catch (e) {
      // Answered elsewhere, or ended with its turn: nothing waits any more.
      if (errorCode(e) === 'permission_already_resolved' || errorStatus(e) === 404) this.store.dispatch({ type: 'done', id: item.id });
      else this.store.dispatch({ type: 'failed', id: item.id, error: errorText(e) });
    }
    this.schedule();
  }

  /**
   * Continues an interrupted turn, or one a budget stopped (POST
   * /session/{id}/continue). A refusal keeps the item with its reason (a
   * 409 budget_exceeded while the session is still over its budget).
   */
  async continueTurn(item: InboxItem): Promise<void> {
    this.store.dispatch({ type: 'busy', id: item.id });
    let out: ContinueOutcome;
    try {
      out = await this.#api.continueTurn(item.session.id);
    } catch (e) {
      out = { kind: 'unknown', error: e, retrySafe: false };
    }
    if (out.kind === 'accepted') this.store.dispatch({ type: 'done', id: item.id });
    else this.store.dispatch({ type: 'failed', id: item.id, error: out.kind === 'declined' ? out.reason : errorText(out.error) });
    this.schedule();
  }

  /** Cancels a stalled turn; one that ended meanwhile is no error (the cancel finds nothing to do). */
  async cancelTurn(item: InboxItem): Promise<void> {
    this.store.dispatch({ type: 'busy', id: item.id });
    try {
      await this.#api.cancelTurn(item.session.id);
      this.store.dispatch({ type: 'done', id: item.id });
    } catch (e) {
      if (isUnauthorized(e)) this.#onUnauthorized?.();
      this.store.dispatch({ type: 'failed', id: item.id, error: errorText(e) });
    }
    this.schedule();
  }
}

/** How many wait, as the badge says it: "200+" past the first page. */
export function inboxCount(s: InboxState): string {
  return s.more ? `${s.items.length}+` : String(s.items.length);
}
