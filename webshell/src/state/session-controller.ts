// Drives one pane's session: loads the snapshot, follows the event stream
// from the snapshot's cursor, and runs the user's actions. Every result is
// dispatched into the pure reducer (session-state.ts) tagged with this
// session's id, and nothing is dispatched once the controller is disposed
// (the pane moved on to another session): a late response or event of a
// session that is no longer shown cannot change what is shown.
import { parsePosition } from './cursor';
import { errorCode, errorStatus, errorText, isAbort, isUnauthorized } from '../lib/errors';
import { newPromptId } from '../lib/ids';
import { createStore, type Store } from './store';
import { initialSessionState, sessionReducer, type SessionAction, type SessionViewState } from './session-state';
import type { AuthMethod, Budget, ContentBlock, EventStreamLike, SessionApi, SessionContext, StreamState, TetherEvent } from './types';

export interface SessionControllerOptions {
  /** Restore a session's agent as soon as it is opened when it needs it. */
  autoResume?: () => boolean;
  /** Called when the daemon rejects the token. */
  onUnauthorized?: () => void;
  /** First delay of the snapshot reload after a failure (doubles, max 10 s). */
  retryMs?: number;
  /** Turns per transcript page (default TRANSCRIPT_PAGE_TURNS). */
  pageTurns?: number;
}

/**
 * Turns per transcript page: the pane opens on the latest 50 and reads 50
 * more as the reader scrolls back past them. A page is a few screens and
 * a few milliseconds of the daemon's however long the history; the whole
 * transcript of 10,000 turns is megabytes, which held up the pane.
 */
export const TRANSCRIPT_PAGE_TURNS = 50;

/** How often the status is read while the session's executor host starts. */
const WORKSPACE_POLL_MS = 2000;

export class SessionController {
  readonly sessionId: string;
  readonly store: Store<SessionViewState, SessionAction>;
  #api: SessionApi;
  #opts: SessionControllerOptions;
  #gen = 0;
  #reads = 0;
  #disposed = false;
  #stream: EventStreamLike | undefined;
  #loadAbort: AbortController | undefined;
  #olderAbort: AbortController | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #retryDelay: number;
  #statusTimer: ReturnType<typeof setTimeout> | undefined;
  #dropped = false;
  #autoResumed = false;
  #paused = false;
  #pauseTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(api: SessionApi, opts: SessionControllerOptions = {}) {
    this.sessionId = api.id;
    this.#api = api;
    this.#opts = opts;
    this.#retryDelay = opts.retryMs ?? 1000;
    this.store = createStore(sessionReducer, initialSessionState(api.id));
  }

  get state(): SessionViewState {
    return this.store.getState();
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  start(): void {
    void this.#load();
  }

  /** Reloads the snapshot and reconnects from its cursor. */
  reload(): void {
    void this.#load();
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#gen++;
    this.#stream?.close();
    this.#stream = undefined;
    this.#loadAbort?.abort();
    this.#olderAbort?.abort();
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#statusTimer);
    clearTimeout(this.#pauseTimer);
  }

  /**
   * The tab was hidden or shown. A tab hidden for a while gives its event
   * stream back (browsers allow few connections per host); when it is
   * shown again the snapshot is reloaded and the stream resumes from it.
   */
  setVisible(visible: boolean, pauseAfterMs = 20_000): void {
    if (this.#disposed) return;
    clearTimeout(this.#pauseTimer);
    if (!visible) {
      this.#pauseTimer = setTimeout(() => {
        if (this.#disposed || !this.#stream) return;
        this.#paused = true;
        this.#stream.close();
      }, pauseAfterMs);
      return;
    }
    if (this.#paused) {
      this.#paused = false;
      void this.#load();
    }
  }

  #dispatch(a: SessionAction): SessionViewState {
    if (this.#disposed) return this.state;
    return this.store.dispatch(a);
  }

  #failed(e: unknown): boolean {
    if (isUnauthorized(e)) {
      this.#opts.onUnauthorized?.();
      return true;
    }
    return false;
  }

  /** Local activity: recovery reads issued before now are stale. */
  #bumpReadFloor(): void {
    this.#dispatch({ type: 'recovery/read-floor', sessionId: this.sessionId, floor: ++this.#reads });
  }

  async #load(): Promise<void> {
    if (this.#disposed) return;
    const gen = ++this.#gen;
    clearTimeout(this.#retryTimer);
    this.#stream?.close();
    this.#stream = undefined;
    this.#loadAbort?.abort();
    // An older page of the view being replaced is of no use any more.
    this.#olderAbort?.abort();
    const abort = new AbortController();
    this.#loadAbort = abort;
    const signal = abort.signal;
    this.#dispatch({ type: 'load/start', sessionId: this.sessionId, gen });
    let transcript, status, session;
    try {
      [transcript, status, session] = await Promise.all([
        // The latest page only: older ones come as the reader scrolls back (loadOlder).
        this.#api.transcript({ signal, limit: this.#pageTurns }),
        this.#api.status({ signal }).catch((e) => (isUnauthorized(e) ? Promise.reject(e) : undefined)),
        this.#api.get({ signal }).catch((e) => (isUnauthorized(e) ? Promise.reject(e) : undefined)),
      ]);
    } catch (e) {
      if (gen !== this.#gen || this.#disposed || isAbort(e)) return;
      if (this.#failed(e)) return;
      this.#dispatch({ type: 'load/failed', sessionId: this.sessionId, gen, error: errorText(e) });
      const delay = this.#retryDelay;
      this.#retryDelay = Math.min(delay * 2, 10_000);
      this.#retryTimer = setTimeout(() => void this.#load(), delay);
      return;
    }
    if (gen !== this.#gen || this.#disposed) return;
    this.#retryDelay = this.#opts.retryMs ?? 1000;
    this.#dispatch({ type: 'load/snapshot', sessionId: this.sessionId, gen, transcript, status, session });
    this.#openStream(gen, transcript.cursor);
    // Read after the transcript, so the plan is at least as new as the
    // snapshot; events in between are ordered by cursor in the reducer.
    void this.refreshContext();
    // A reconnecting executor is not resumed: its agent runs on its host,
    // and the daemon attaches to it again by itself.
    if (status && status.needsResume && status.isResumable && status.executorStatus !== 'reconnecting' && !this.#autoResumed && this.#opts.autoResume?.()) {
      this.#autoResumed = true;
      void this.resume();
    }
  }

  get #pageTurns(): number {
    return this.#opts.pageTurns ?? TRANSCRIPT_PAGE_TURNS;
  }

  /**
   * Reads the page of turns before the oldest the view holds, for the
   * reducer to put in front (the Timeline asks, at its top); once at a
   * time, not once the first turn is held. The stream goes on meanwhile:
   * the reducer merges the page without doubling anything, or drops it if
   * a reload started over. A failure stays in history.error until asked again.
   */
  async loadOlder(): Promise<void> {
    const before = this.state;
    const token = before.history.next;
    if (this.#disposed || !token) return;
    const gen = this.#gen;
    // Refused (not ready, a read already running): nothing to read.
    if (this.#dispatch({ type: 'older/start', sessionId: this.sessionId, gen, token }) === before) return;
    const abort = new AbortController();
    this.#olderAbort = abort;
    try {
      const page = await this.#api.transcript({ signal: abort.signal, limit: this.#pageTurns, pageToken: token });
      if (gen !== this.#gen || this.#disposed) return;
      this.#dispatch({ type: 'load/older', sessionId: this.sessionId, gen, token, page });
    } catch (e) {
      if (gen !== this.#gen || this.#disposed || isAbort(e)) return;
      if (this.#failed(e)) return;
      this.#dispatch({ type: 'older/failed', sessionId: this.sessionId, gen, token, error: errorText(e) });
    }
  }

  #openStream(gen: number, cursor: string): void {
    this.#dropped = false;
    const stream = this.#api.events({
      cursor,
      onStateChange: (st: StreamState) => this.#onStreamState(gen, st),
    });
    this.#stream = stream;
    void (async () => {
      try {
        for await (const ev of stream) {
          if (gen !== this.#gen || this.#disposed) break;
          if (ev.type === 'resync_required') {
            // The log no longer matches our snapshot: reload it.
            void this.#load();
            return;
          }
          if (ev.id !== undefined) {
            const p = parsePosition(ev.id);
            const epoch = this.state.epoch;
            if (p && epoch !== undefined && p.epoch !== epoch) {
              void this.#load();
              return;
            }
          }
          this.#dispatch({ type: 'event', sessionId: this.sessionId, gen, event: ev });
          this.#afterEvent(ev);
        }
      } catch (e) {
        if (gen !== this.#gen || this.#disposed) return;
        if (this.#failed(e)) return;
        this.#dispatch({ type: 'notice', sessionId: this.sessionId, notice: { kind: 'error', text: errorText(e) } });
        this.#retryTimer = setTimeout(() => void this.#load(), this.#retryDelay);
      } finally {
        if (gen === this.#gen && !this.#disposed) this.#dispatch({ type: 'connection', sessionId: this.sessionId, gen, state: 'closed' });
      }
    })();
  }

  #onStreamState(gen: number, st: StreamState): void {
    if (gen !== this.#gen || this.#disposed) return;
    const before = this.state;
    this.#dispatch({ type: 'connection', sessionId: this.sessionId, gen, state: st });
    if (st === 'connecting' && before.everOpen) this.#dropped = true;
    if (st === 'open' && this.#dropped) {
      this.#dropped = false;
      this.#onReconnected();
    }
  }

  /** Back after a drop (daemon restart, network): refresh what the log does not carry. */
  #onReconnected(): void {
    if (this.state.continuation.status === 'unknown') {
      // An ambiguous continuation is reconciled by a fresh snapshot.
      void this.#load();
      return;
    }
    this.#scheduleStatus(0);
    void this.refreshContext();
  }

  #afterEvent(ev: TetherEvent): void {
    switch (ev.type) {
      case 'session.executor_status':
      case 'session.resumed':
      case 'session.state_changed':
      case 'session.closed':
        this.#scheduleStatus(150);
        break;
      case 'session.budget_changed':
        // A raised budget may let the stopped turn continue: the recovery
        // plan says so, and no event carries it.
        void this.refreshContext();
        break;
      default:
    }
  }

  #scheduleStatus(ms: number): void {
    clearTimeout(this.#statusTimer);
    this.#statusTimer = setTimeout(() => void this.refreshStatus(), ms);
  }

  async refreshStatus(): Promise<void> {
    try {
      const status = await this.#api.status();
      this.#dispatch({ type: 'status', sessionId: this.sessionId, status });
      // The executor's host is starting or reconnecting: no event says
      // when its workspace is back, so ask again.
      if (status.workspace?.status === 'starting' && !this.#disposed) this.#scheduleStatus(WORKSPACE_POLL_MS);
    } catch (e) {
      this.#failed(e);
    }
  }

  /** Reads the recovery plan; ordered against events and local activity. */
  async refreshContext(): Promise<void> {
    const read = ++this.#reads;
    try {
      const context = await this.#api.context();
      if (this.#disposed) return;
      const p = parsePosition(context.cursor);
      const epoch = this.state.epoch;
      if (p && epoch !== undefined && p.epoch !== epoch && this.state.phase === 'ready') {
        void this.#load();
        return;
      }
      this.#dispatch({ type: 'context', sessionId: this.sessionId, context, read });
    } catch (e) {
      if (this.#failed(e)) return;
    }
  }

  /**
   * Sends a prompt; resolves false when it was refused by the daemon.
   * blocks is the whole prompt when it is more than text (images,
   * mentioned files); text is what the message shows.
   */
  async sendPrompt(text: string, promptId = newPromptId('p'), blocks?: ContentBlock[]): Promise<boolean> {
    if (this.#disposed || (!text.trim() && !blocks?.length)) return false;
    this.#bumpReadFloor();
    if (!this.state.pending[promptId]) this.#dispatch({ type: 'prompt/sending', sessionId: this.sessionId, promptId, text, ...(blocks ? { blocks } : {}) });
    try {
      const r = await this.#api.prompt(blocks ?? [{ type: 'text', text }], { promptId });
      this.#dispatch({ type: 'prompt/accepted', sessionId: this.sessionId, promptId, state: r.state });
      return true;
    } catch (e) {
      if (this.#failed(e)) return false;
      this.#dispatch({ type: 'prompt/failed', sessionId: this.sessionId, promptId, error: errorText(e) });
      return false;
    }
  }

  /** Resends a failed prompt with its promptId (idempotent on the daemon). */
  retryPrompt(promptId: string): void {
    const p = this.state.pending[promptId];
    if (!p || p.status !== 'failed') return;
    this.#dispatch({ type: 'prompt/discard', sessionId: this.sessionId, promptId });
    void this.sendPrompt(p.text, promptId, p.blocks);
  }

  discardPrompt(promptId: string): void {
    this.#dispatch({ type: 'prompt/discard', sessionId: this.sessionId, promptId });
  }

  /**
   * The Continue button. Sends at most one request per click that the
   * state admits: the click moves the continuation to `sending`, which
   * hides the button, so a second click (or key press) is refused here.
   * Resolves whether a request was sent.
   */
  async continue(): Promise<boolean> {
    if (this.#disposed) return false;
    const before = this.state;
    const after = this.#dispatch({ type: 'continue/click', sessionId: this.sessionId, key: newPromptId('c') });
    if (after === before || after.continuation.status !== 'sending' || !after.continuation.key) return false;
    const key = after.continuation.key;
    this.#bumpReadFloor();
    let outcome: Awaited<ReturnType<SessionApi['continue']>>;
    let errorTextValue: string | undefined;
    try {
      outcome = await this.#api.continue({ promptId: key });
    } catch (e) {
      if (this.#failed(e)) return true;
      const status = errorStatus(e);
      if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) {
        // A definite refusal other than 409 (400, 404): not ambiguous.
        outcome = { kind: 'declined', reason: errorCode(e) ?? `http_${status}`, problem: e };
      } else {
        outcome = { kind: 'unknown', error: e, retrySafe: true };
      }
    }
    if (outcome.kind === 'unknown') errorTextValue = errorText(outcome.error);
    if (this.#disposed) return true;
    this.#dispatch({ type: 'continue/outcome', sessionId: this.sessionId, key, outcome, errorText: errorTextValue });
    if (outcome.kind === 'declined') void this.refreshContext();
    return true;
  }

  /**
   * Stops the running turn (Esc, the Stop button). The prompts queued
   * behind it stay queued, each with its Withdraw: stopping one answer
   * does not take back what the user asked next.
   */
  async cancel(): Promise<void> {
    if (this.#disposed) return;
    this.#bumpReadFloor();
    this.#dispatch({ type: 'cancel/start', sessionId: this.sessionId });
    try {
      await this.#api.cancel({ keepQueue: true });
      this.#dispatch({ type: 'cancel/done', sessionId: this.sessionId });
    } catch (e) {
      if (this.#failed(e)) return;
      this.#dispatch({ type: 'cancel/done', sessionId: this.sessionId, error: errorText(e) });
    }
    // Idle cancels emit no event; read the plan so the banner is current.
    void this.refreshContext();
  }

  /** Withdraws a queued prompt; its turn.cancelled event updates the view. */
  async withdraw(promptId: string): Promise<void> {
    if (this.#disposed) return;
    try {
      await this.#api.withdraw(promptId);
    } catch (e) {
      if (this.#failed(e)) return;
      this.#dispatch({ type: 'notice', sessionId: this.sessionId, notice: { kind: 'error', text: errorText(e) } });
    }
    void this.refreshContext();
  }

  async answerPermission(requestId: string, optionId: string | null): Promise<void> {
    if (this.#disposed) return;
    this.#dispatch({ type: 'permission/answering', sessionId: this.sessionId, requestId });
    try {
      await this.#api.answerPermission(requestId, optionId === null ? { outcome: 'cancelled' } : { optionId });
    } catch (e) {
      if (this.#failed(e)) return;
      this.#dispatch({ type: 'permission/failed', sessionId: this.sessionId, requestId, error: errorText(e) });
    }
  }

  async resume(): Promise<void> {
    if (this.#disposed || this.state.resuming) return;
    this.#dispatch({ type: 'resume/start', sessionId: this.sessionId });
    try {
      const status = await this.#api.resume();
      this.#dispatch({ type: 'resume/done', sessionId: this.sessionId, status });
    } catch (e) {
      if (this.#failed(e)) return;
      const methods = (e as { body?: { authMethods?: unknown } } | null)?.body?.authMethods;
      this.#dispatch({
        type: 'resume/done',
        sessionId: this.sessionId,
        error: errorText(e),
        code: errorCode(e),
        ...(Array.isArray(methods) ? { authMethods: methods as AuthMethod[] } : {}),
      });
    }
  }

  /** Sets the agent's mode; the answer's context updates the pickers. */
  setMode(modeId: string): Promise<void> {
    return this.#changeOption(() => this.#api.setMode(modeId));
  }

  /** Sets one of the agent's config options (a value id or a boolean). */
  setConfigOption(optionId: string, value: string | boolean): Promise<void> {
    return this.#changeOption(() => this.#api.setConfigOption(optionId, value));
  }

  async #changeOption(change: () => Promise<{ context: SessionContext }>): Promise<void> {
    if (this.#disposed) return;
    const read = ++this.#reads;
    try {
      const { context } = await change();
      if (this.#disposed) return;
      this.#dispatch({ type: 'context', sessionId: this.sessionId, context, read });
    } catch (e) {
      if (this.#failed(e)) return;
      this.#dispatch({ type: 'notice', sessionId: this.sessionId, notice: { kind: 'error', text: errorText(e) } });
    }
  }

  /** Opens or closes the pane's budget editor. */
  openBudgetEditor(open = true): void {
    this.#dispatch({ type: 'budget/editor', sessionId: this.sessionId, open });
  }

  /**
   * Sets the session's budget, whole (PATCH /session/{id}; {} clears it).
   * Resolves undefined when saved, else what went wrong in words: the
   * daemon's problem detail on a 400, its first line (a schema's
   * complaint goes on with the schema).
   */
  async setBudget(budget: Budget): Promise<string | undefined> {
    if (this.#disposed) return undefined;
    if (!this.#api.update) return 'unsupported';
    try {
      const session = await this.#api.update({ budget });
      this.#dispatch({ type: 'budget/saved', sessionId: this.sessionId, session });
    } catch (e) {
      this.#failed(e); // a rejected token signs out
      return errorText(e).split('\n')[0]!.trim();
    }
    void this.refreshContext();
    return undefined;
  }

  dismissNotice(): void {
    this.#dispatch({ type: 'notice', sessionId: this.sessionId, notice: undefined });
  }
}
