// One terminal as a pane shows it: a WebSocket that is opened again from
// the last byte offset received whenever it drops (a page reload, a
// network cut, a daemon restart), so that the screen misses nothing and
// repeats nothing. No UI: the view feeds it keystrokes and sizes and
// writes what it hands back.

/** The part of the SDK's TerminalConnection the link uses. */
export interface TerminalConnectionLike {
  readonly end: number;
  send(data: string | Uint8Array): void;
  resize(cols: number, rows: number): void;
  close(): void;
}

/** The callbacks of the SDK's TerminalClient.attach that the link uses. */
export interface TerminalAttachOptions {
  offset?: number;
  onData?: (data: Uint8Array, offset: number) => void;
  onOpen?: (offset: number) => void;
  onExit?: (exitCode: number | undefined) => void;
  onClose?: (code: number, reason: string) => void;
}

/** The part of the SDK's TerminalClient the workspace panel uses. */
export interface TerminalApi {
  open(size?: { cols?: number; rows?: number }): Promise<{ id: string; exited: boolean; exitCode?: number }>;
  list(): Promise<{ terminals: { id: string; exited: boolean; exitCode?: number; startedAt: string }[] }>;
  close(terminalId: string): Promise<unknown>;
  attach(terminalId: string, opts: TerminalAttachOptions): TerminalConnectionLike;
}

/**
 * connecting: the first connection; open; reconnecting: it dropped and is
 * opened again from where it stopped; exited: the shell ended (its exit
 * code is known); gone: the terminal no longer exists (deleted, or its
 * executor restarted without it); closed: the link was disposed.
 */
export type TerminalLinkState = 'connecting' | 'open' | 'reconnecting' | 'exited' | 'gone' | 'closed';

export interface TerminalLinkHandlers {
  onData: (data: Uint8Array) => void;
  onState: (state: TerminalLinkState, exitCode?: number) => void;
}

export interface TerminalLinkOptions {
  /** First delay before a reconnect (doubles up to maxMs). */
  initialMs?: number;
  maxMs?: number;
  /** Where output starts: 0 replays what the executor kept (a page reload). */
  offset?: number;
}

/** Keystrokes typed while no connection is up, at most this many bytes. */
const PENDING_MAX = 64 * 1024;

/** Reasons (problem codes) that say the terminal is gone for good. */
const GONE = new Set(['terminal_not_found', 'session_not_found', 'terminal_disabled']);

export class TerminalLink {
  readonly terminalId: string;
  #api: TerminalApi;
  #h: TerminalLinkHandlers;
  #conn: TerminalConnectionLike | undefined;
  #end: number;
  #state: TerminalLinkState = 'connecting';
  #delay: number;
  #initialMs: number;
  #maxMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #size: { cols: number; rows: number } | undefined;
  #pending: (string | Uint8Array)[] = [];
  #pendingBytes = 0;
  /** Bumped per connection: callbacks of an older one are ignored. */
  #gen = 0;

  constructor(api: TerminalApi, terminalId: string, handlers: TerminalLinkHandlers, opts: TerminalLinkOptions = {}) {
    this.#api = api;
    this.terminalId = terminalId;
    this.#h = handlers;
    this.#end = opts.offset ?? 0;
    this.#initialMs = opts.initialMs ?? 250;
    this.#maxMs = opts.maxMs ?? 5000;
    this.#delay = this.#initialMs;
    this.#connect();
  }

  get state(): TerminalLinkState {
    return this.#state;
  }

  /** Where the output received so far ends. */
  get end(): number {
    return this.#end;
  }

  #set(state: TerminalLinkState, exitCode?: number): void {
    if (this.#state === state && exitCode === undefined) return;
    this.#state = state;
    this.#h.onState(state, exitCode);
  }

  #connect(): void {
    const gen = ++this.#gen;
    const mine = () => gen === this.#gen && this.#state !== 'closed';
    let exited = false;
    this.#conn = this.#api.attach(this.terminalId, {
      offset: this.#end,
      onOpen: () => {
        if (!mine()) return;
        this.#delay = this.#initialMs;
        this.#set('open');
        if (this.#size) this.#conn?.resize(this.#size.cols, this.#size.rows);
        const pending = this.#pending;
        this.#pending = [];
        this.#pendingBytes = 0;
        for (const p of pending) this.#conn?.send(p);
      },
      onData: (data, at) => {
        if (!mine()) return;
        // Output is addressed by byte offset: skip what was already shown
        // (never expected, but a repeat would garble the screen).
        const skip = Math.max(0, this.#end - at);
        if (skip >= data.byteLength) return;
        this.#end = at + data.byteLength;
        this.#h.onData(skip > 0 ? data.subarray(skip) : data);
      },
      onExit: (code) => {
        if (!mine()) return;
        exited = true;
        this.#set('exited', code ?? -1);
      },
      onClose: (_code, reason) => {
        if (!mine()) return;
        this.#conn = undefined;
        if (exited || this.#state === 'exited') return;
        if (GONE.has(reason)) {
          this.#set('gone');
          return;
        }
        this.#set(this.#state === 'connecting' ? 'connecting' : 'reconnecting');
        this.#timer = setTimeout(() => {
          if (mine()) this.#connect();
        }, this.#delay);
        this.#delay = Math.min(this.#delay * 2, this.#maxMs);
      },
    });
  }

  /** Types into the terminal; kept (bounded) while the connection is down. */
  send(data: string): void {
    if (this.#state === 'exited' || this.#state === 'gone' || this.#state === 'closed') return;
    if (this.#conn && this.#state === 'open') {
      this.#conn.send(data);
      return;
    }
    if (this.#pendingBytes + data.length > PENDING_MAX) return;
    this.#pending.push(data);
    this.#pendingBytes += data.length;
  }

  /** Sets the terminal's size now and after every reconnect. */
  resize(cols: number, rows: number): void {
    if (cols <= 0 || rows <= 0) return;
    if (this.#size?.cols === cols && this.#size.rows === rows) return;
    this.#size = { cols, rows };
    if (this.#state === 'open') this.#conn?.resize(cols, rows);
  }

  /** Reconnects now instead of after the backoff. */
  retry(): void {
    if (this.#state !== 'reconnecting' && this.#state !== 'connecting') return;
    clearTimeout(this.#timer);
    this.#conn?.close();
    this.#connect();
  }

  /** Closes the connection; the terminal goes on on its executor. */
  dispose(): void {
    clearTimeout(this.#timer);
    this.#set('closed');
    this.#gen++;
    this.#conn?.close();
    this.#conn = undefined;
  }
}
