import * as sdk from './gen/sdk.gen.js';
import type { Terminal, TerminalList, TerminalOutput } from './gen/types.gen.js';
import type { CallOptions, TetherClient } from './client.js';

/**
 * The part of a WebSocket the terminal connection uses: the browser's
 * `WebSocket` and the `ws` package's both fit.
 */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: string | ArrayBufferLike | Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

/**
 * Makes the WebSocket of a terminal connection. In Node (which has no
 * WebSocket of its own before version 22) pass one from the `ws` package:
 * `(url, headers) => new WebSocket(url, { headers })`. The default uses
 * `globalThis.WebSocket` (a browser's), which cannot send the Authorization
 * header: it opens the WebSocket with a ticket instead (see attach).
 */
export type WebSocketFactory = (url: string, headers: Record<string, string>) => WebSocketLike;

/** Options of {@link TerminalClient.attach}. */
export interface AttachOptions {
  /** The byte offset to start from: 0 for the whole kept output, or the `end` reached before. */
  offset?: number;
  webSocket?: WebSocketFactory;
  /** Output bytes, and the offset they start at. */
  onData?: (data: Uint8Array, offset: number) => void;
  /** The connection is open; output starts at `offset`. */
  onOpen?: (offset: number) => void;
  /** The shell exited with `exitCode`. */
  onExit?: (exitCode: number | undefined) => void;
  /** The connection closed (reconnect with `end` to go on). */
  onClose?: (code: number, reason: string) => void;
}

/**
 * One WebSocket connection to a terminal. What is sent before the server's
 * hello waits for it, in order. The WebSocket may come later (a browser's
 * waits for its ticket): until then everything waits the same way.
 */
export class TerminalConnection {
  #ws: WebSocketLike | undefined;
  #end: number;
  #queue: (string | Uint8Array)[] | undefined = [];
  #closed = false;
  readonly #opts: AttachOptions;
  #open!: (offset: number) => void;
  #fail!: (e: Error) => void;
  /** Resolves with the offset output starts at once the connection is open. */
  readonly opened: Promise<number>;

  constructor(ws: WebSocketLike | Promise<WebSocketLike>, offset: number, opts: AttachOptions) {
    this.#end = offset;
    this.#opts = opts;
    this.opened = new Promise<number>((res, rej) => ((this.#open = res), (this.#fail = rej)));
    this.opened.catch(() => {});
    if (!(ws instanceof Promise)) {
      this.#wire(ws);
      return;
    }
    ws.then(
      (w) => {
        this.#wire(w);
        if (this.#closed) this.close();
      },
      (e: unknown) => {
        // A refused ticket's problem code (terminal_not_found, ...) is the
        // reason, so that a caller can tell "gone" from "try again".
        const code = (e as { code?: unknown } | null)?.code;
        const reason = typeof code === 'string' ? code : e instanceof Error ? e.message : String(e);
        this.#closed = true;
        this.#fail(new Error(`terminal connection failed: ${reason}`));
        opts.onClose?.(1006, reason);
      },
    );
  }

  #wire(ws: WebSocketLike): void {
    const opts = this.#opts;
    this.#ws = ws;
    ws.binaryType = 'arraybuffer';
    ws.onmessage = (ev) => {
      const d = ev.data;
      if (typeof d === 'string') {
        const m = JSON.parse(d) as { type: string; offset?: number; exitCode?: number };
        if (m.type === 'hello') {
          this.#end = m.offset ?? this.#end;
          const queued = this.#queue ?? [];
          this.#queue = undefined;
          for (const q of queued) ws.send(q);
          this.#open(this.#end);
          opts.onOpen?.(this.#end);
        } else if (m.type === 'exit') opts.onExit?.(m.exitCode);
        return;
      }
      const bytes = d instanceof ArrayBuffer ? new Uint8Array(d) : new Uint8Array(d as ArrayBufferLike);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const at = Number(view.getBigUint64(0));
      const data = bytes.subarray(8);
      this.#end = at + data.byteLength;
      opts.onData?.(data, at);
    };
    ws.onclose = (ev) => {
      this.#closed = true;
      this.#fail(new Error(`terminal connection closed (${ev.code} ${ev.reason})`));
      opts.onClose?.(ev.code, ev.reason);
    };
  }

  #send(data: string | Uint8Array): void {
    if (this.#queue) this.#queue.push(data);
    else this.#ws?.send(data);
  }

  /** Where the output received so far ends: reconnect from here to miss nothing. */
  get end(): number {
    return this.#end;
  }

  /** Types text (or bytes) into the terminal. */
  send(data: string | Uint8Array): void {
    this.#send(typeof data === 'string' ? new TextEncoder().encode(data) : data);
  }

  /** Resizes the terminal. */
  resize(cols: number, rows: number): void {
    this.#send(JSON.stringify({ type: 'resize', cols, rows }));
  }

  /** Closes the connection; the terminal goes on. */
  close(): void {
    this.#closed = true;
    const ws = this.#ws;
    if (ws?.readyState === 0) {
      // Still connecting: close once open (a browser reports a socket
      // closed while connecting as an error in its console).
      ws.onmessage = () => {};
      ws.onopen = () => ws.close(1000, 'closed by the client');
      return;
    }
    ws?.close(1000, 'closed by the client');
  }
}

/**
 * A session's interactive terminals (docs/terminal.md): shells on a PTY in
 * the session's directory, on its executor, with their output kept by byte
 * offset so that a reconnect misses nothing. Refusals are TetherProblems
 * with a terminal_* code.
 */
export class TerminalClient {
  readonly client: TetherClient;
  readonly sessionId: string;

  constructor(client: TetherClient, sessionId: string) {
    this.client = client;
    this.sessionId = sessionId;
  }

  #path(terminalId: string) {
    return { id: this.sessionId, terminalId };
  }

  /** POST /session/{id}/terminals: starts a shell. */
  open(size: { cols?: number; rows?: number } = {}, o?: CallOptions): Promise<Terminal> {
    return this.client.call((signal) => sdk.openTerminal({ client: this.client.gen, path: { id: this.sessionId }, body: size, signal }), o);
  }

  /** GET /session/{id}/terminals. */
  list(o?: CallOptions): Promise<TerminalList> {
    return this.client.call((signal) => sdk.listTerminals({ client: this.client.gen, path: { id: this.sessionId }, signal }), o);
  }

  /** DELETE /session/{id}/terminals/{terminalId}: ends the shell. */
  close(terminalId: string, o?: CallOptions): Promise<Terminal> {
    return this.client.call((signal) => sdk.closeTerminal({ client: this.client.gen, path: this.#path(terminalId), signal }), o);
  }

  /** POST .../input: types text. */
  async write(terminalId: string, text: string, o?: CallOptions): Promise<void> {
    await this.client.call((signal) => sdk.writeTerminal({ client: this.client.gen, path: this.#path(terminalId), body: { text }, signal }), o);
  }

  /** GET .../output: output from `offset`, waiting up to `wait` ms for some. */
  read(terminalId: string, q: { offset?: number; wait?: number } = {}, o?: CallOptions): Promise<TerminalOutput> {
    return this.client.call((signal) => sdk.readTerminal({ client: this.client.gen, path: this.#path(terminalId), query: q, signal }), o);
  }

  /** POST .../resize. */
  resize(terminalId: string, cols: number, rows: number, o?: CallOptions): Promise<Terminal> {
    return this.client.call(
      (signal) => sdk.resizeTerminal({ client: this.client.gen, path: this.#path(terminalId), body: { cols, rows }, signal }),
      o,
    );
  }

  /**
   * Opens the terminal's WebSocket from `opts.offset` (default 0). With
   * `opts.webSocket` (Node's `ws`) it sends the Authorization header; with
   * the default, a browser's `WebSocket`, which cannot, it first gets a
   * one-connection ticket (`POST /events/tickets {sessionId, terminalId}`),
   * so the bearer token never goes into a URL.
   */
  attach(terminalId: string, opts: AttachOptions = {}): TerminalConnection {
    const offset = opts.offset ?? 0;
    const base = this.client.baseUrl.replace(/^http/, 'ws');
    if (opts.webSocket) {
      const url = `${base}/session/${encodeURIComponent(this.sessionId)}/terminals/${encodeURIComponent(terminalId)}/ws?offset=${offset}`;
      return new TerminalConnection(opts.webSocket(url, this.client.authHeaders()), offset, opts);
    }
    const WS = (globalThis as { WebSocket?: new (u: string) => WebSocketLike }).WebSocket;
    if (!WS) throw new TypeError('no WebSocket: pass opts.webSocket (e.g. from the ws package)');
    const ws = this.client
      .createStreamTicket({ sessionId: this.sessionId, terminalId })
      .then((t) => new WS(`${base}${t.url}&offset=${offset}`));
    return new TerminalConnection(ws, offset, opts);
  }
}
