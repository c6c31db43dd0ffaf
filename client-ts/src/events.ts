import { parseCursor, type ParsedCursor } from './cursor.js';
import { TetherNetworkError, TetherProblem } from './errors.js';
import {
  EventType,
  type ResyncRequiredData,
  type TetherEvent,
  type Transcript,
} from './gen/types.gen.js';
import { SSEParser, type SSEFrame } from './sse.js';

/** One event from a stream: the contract's TetherEvent union, discriminated by `type`. */
export type StreamEvent = TetherEvent;
/** The member of StreamEvent with the given type. */
export type StreamEventOf<T extends StreamEvent['type']> = Extract<StreamEvent, { type: T }>;

/** Control frames: never stored, never carrying an id. */
export type ControlEventType = 'resync_required' | 'replay_complete' | 'stream_lagged';
export type ControlEvent = StreamEventOf<ControlEventType>;
/** Events from the durable log; they carry `id` (the cursor). */
export type DurableEvent = Exclude<StreamEvent, ControlEvent>;

/** The events that end a turn. */
export type TurnTerminalEventType = 'turn.completed' | 'turn.failed' | 'turn.cancelled' | 'turn.interrupted';
export type TurnTerminalEvent = StreamEventOf<TurnTerminalEventType>;

/** Every event type of the contract, at run time (generated from the EventType enum). */
export const EVENT_TYPES: readonly EventType[] = Object.freeze(Object.values(EventType));
export const CONTROL_EVENT_TYPES: readonly ControlEventType[] = Object.freeze([
  'resync_required',
  'replay_complete',
  'stream_lagged',
]);
export const TURN_TERMINAL_EVENT_TYPES: readonly TurnTerminalEventType[] = Object.freeze([
  'turn.completed',
  'turn.failed',
  'turn.cancelled',
  'turn.interrupted',
]);

const KNOWN_TYPES: ReadonlySet<string> = new Set<string>(EVENT_TYPES);
const CONTROL_TYPES: ReadonlySet<string> = new Set<string>(CONTROL_EVENT_TYPES);
const TERMINAL_TYPES: ReadonlySet<string> = new Set<string>(TURN_TERMINAL_EVENT_TYPES);

export function isControlEvent(e: StreamEvent): e is ControlEvent {
  return CONTROL_TYPES.has(e.type);
}

export function isTurnTerminalEvent(e: StreamEvent): e is TurnTerminalEvent {
  return TERMINAL_TYPES.has(e.type);
}

/**
 * - `connecting`: no connection yet (first connect, backoff before a
 *   reconnect, or waiting for `resyncFrom` after `resync_required`);
 * - `catching_up`: connected, replaying the log (until `replay_complete`);
 * - `open`: connected and live;
 * - `closed`: finished (end of stream, error, close() or abort); final.
 */
export type StreamState = 'connecting' | 'open' | 'catching_up' | 'closed';

export interface BackoffOptions {
  /** First reconnect delay. Default 250 ms. */
  initialMs?: number;
  /** Upper bound of a delay. Default 10 000 ms. */
  maxMs?: number;
  /** Growth per failed attempt. Default 2. */
  factor?: number;
  /** Fraction of the delay that is randomised (0..1). Default 0.5: delay in [d/2, d]. */
  jitter?: number;
}

export interface EventStreamOptions {
  /** Resume after this cursor (sent as Last-Event-ID). Default: the beginning of the log. */
  cursor?: string;
  /** Only these event types (control frames always come). */
  types?: ReadonlyArray<EventType | (string & {})>;
  /** false: end after the replay (`replay_complete`). Default true. */
  follow?: boolean;
  /** Aborting ends the iteration (the iterator returns). */
  signal?: AbortSignal;
  /** Called on every state change. */
  onStateChange?: (state: StreamState, previous: StreamState) => void;
  /** Called for every transient failure before a reconnect (network error, 5xx, dead connection). */
  onError?: (error: unknown, attempt: number) => void;
  /** Reconnect backoff (exponential, with jitter, capped). */
  backoff?: BackoffOptions;
  /** Give up (the iterator throws) after this many consecutive failed reconnects. Default: never. */
  maxRetries?: number;
  /**
   * A connection that delivers nothing (not even a heartbeat comment) for
   * this long is considered dead and is replaced. Default 45 000 ms (the
   * daemon pings every 15 s); 0 disables.
   */
  idleTimeoutMs?: number;
}

/** How an EventStream reaches its endpoint (built by TetherClient). */
export interface EventStreamTransport {
  /** The endpoint URL with its query (types, follow), without a cursor. */
  url: string;
  /** Request headers (Authorization). Called for every connection. */
  headers: () => Record<string, string>;
  fetch: typeof fetch;
  /** A session stream reconnects at once after `session.closed` to get its final 204. */
  kind: 'session' | 'global';
}

class Wakeable {
  #resolve: (() => void) | undefined;
  wait(ms?: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        if (timer !== undefined) clearTimeout(timer);
        if (this.#resolve === done) this.#resolve = undefined;
        resolve();
      };
      this.#resolve = done;
      if (ms !== undefined) timer = setTimeout(done, ms);
    });
  }
  wake(): void {
    this.#resolve?.();
  }
}

/**
 * A resumable, fetch-based Server-Sent Events reader (so the bearer token
 * is sent; works in browsers and Node 20). Iterate it once with
 * `for await`. It keeps the last durable cursor, reconnects with backoff
 * sending `Last-Event-ID`, never yields a durable event twice, yields the
 * control frames as typed events, and after `resync_required` waits until
 * `resyncFrom(cursor)` (see `resyncFromSnapshot`) says where to go on.
 */
export class EventStream implements AsyncIterable<StreamEvent> {
  #transport: EventStreamTransport;
  #opts: EventStreamOptions;
  #cursor: string | undefined;
  #last: ParsedCursor | undefined;
  #state: StreamState = 'connecting';
  #closed = false;
  #iterated = false;
  #conn: AbortController | undefined;
  #wake = new Wakeable();
  #resync: ResyncRequiredData | undefined;
  #resyncPending = false;
  #reconnectNow = false;
  #retryMs: number | undefined;
  #onAbort: (() => void) | undefined;

  /** Replaceable state callback (initially `options.onStateChange`). */
  onStateChange: ((state: StreamState, previous: StreamState) => void) | undefined;

  constructor(transport: EventStreamTransport, options: EventStreamOptions = {}) {
    this.#transport = transport;
    this.#opts = options;
    this.onStateChange = options.onStateChange;
    if (options.cursor !== undefined && options.cursor !== '') {
      this.#cursor = options.cursor;
      this.#last = parseCursor(options.cursor);
    }
    const signal = options.signal;
    if (signal) {
      if (signal.aborted) {
        this.#closed = true;
        this.#state = 'closed';
      } else {
        this.#onAbort = () => this.close();
        signal.addEventListener('abort', this.#onAbort, { once: true });
      }
    }
  }

  /** The cursor of the last durable event seen (or the position the server confirmed), if any. */
  get cursor(): string | undefined {
    return this.#cursor;
  }

  get state(): StreamState {
    return this.#state;
  }

  /** The payload of the last `resync_required` while the stream waits for `resyncFrom`. */
  get pendingResync(): ResyncRequiredData | undefined {
    return this.#resyncPending ? this.#resync : undefined;
  }

  /** The reconnect delay the server suggested with `retry:` (informational). */
  get serverRetryMs(): number | undefined {
    return this.#retryMs;
  }

  /**
   * Continues the stream from `cursor` (a snapshot's cursor after
   * `resync_required`, usually `Transcript.cursor`). Dedupe restarts from
   * it. Also usable at any time to jump.
   */
  resyncFrom(cursor: string): void {
    if (this.#closed) return;
    this.#cursor = cursor;
    this.#last = parseCursor(cursor);
    this.#resyncPending = false;
    this.#reconnectNow = true;
    this.#conn?.abort();
    this.#wake.wake();
  }

  /** Drops the current connection and reconnects at once from the cursor. */
  reconnect(): void {
    if (this.#closed) return;
    this.#reconnectNow = true;
    this.#conn?.abort();
    this.#wake.wake();
  }

  /** Ends the stream; a pending or later `next()` returns done. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#conn?.abort();
    this.#wake.wake();
    this.#detach();
    this.#setState('closed');
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    if (this.#iterated) throw new Error('an EventStream can be iterated only once');
    this.#iterated = true;
    return this.#run();
  }

  #detach(): void {
    if (this.#onAbort && this.#opts.signal) {
      this.#opts.signal.removeEventListener('abort', this.#onAbort);
      this.#onAbort = undefined;
    }
  }

  #setState(s: StreamState): void {
    if (this.#state === s) return;
    if (this.#state === 'closed') return;
    const prev = this.#state;
    this.#state = s;
    try {
      this.onStateChange?.(s, prev);
    } catch {
      // a throwing observer must not break the stream
    }
  }

  #delay(attempt: number): number {
    const b = this.#opts.backoff ?? {};
    const initial = b.initialMs ?? 250;
    const max = b.maxMs ?? 10_000;
    const factor = b.factor ?? 2;
    const jitter = Math.min(1, Math.max(0, b.jitter ?? 0.5));
    const d = Math.min(max, initial * Math.pow(factor, Math.max(0, attempt - 1)));
    return Math.round(d * (1 - jitter * Math.random()));
  }

  #url(): string {
    return this.#transport.url;
  }

  async *#run(): AsyncGenerator<StreamEvent, void, undefined> {
    let failures = 0;
    let closedSeen = false;
    let closedReconnects = 0;
    const follow = this.#opts.follow !== false;
    try {
      while (!this.#closed) {
        if (this.#resyncPending) {
          this.#setState('connecting');
          await this.#wake.wait();
          continue;
        }
        if (failures > 0 && !this.#reconnectNow) {
          this.#setState('connecting');
          await this.#wake.wait(this.#delay(failures));
          if (this.#closed) break;
        }
        this.#reconnectNow = false;
        this.#setState('connecting');

        const ctl = new AbortController();
        this.#conn = ctl;
        const headers: Record<string, string> = { Accept: 'text/event-stream', ...this.#transport.headers() };
        if (this.#cursor) headers['Last-Event-ID'] = this.#cursor;
        let res: Response;
        try {
          const f = this.#transport.fetch;
          res = await f(this.#url(), { method: 'GET', headers, signal: ctl.signal, cache: 'no-store' });
        } catch (err) {
          if (this.#closed) break;
          if (this.#reconnectNow) continue;
          failures++;
          this.#report(new TetherNetworkError(`event stream connection failed: ${errMessage(err)}`, { cause: err }), failures);
          continue;
        }

        if (res.status === 204) {
          await res.body?.cancel().catch(() => {});
          break; // the session is closed and fully delivered
        }
        if (!res.ok) {
          const problem = new TetherProblem(res.status, await readBody(res));
          if (res.status >= 500 || res.status === 429 || res.status === 408) {
            failures++;
            this.#report(problem, failures);
            continue;
          }
          throw problem;
        }

        this.#setState('catching_up');
        const outcome = { replayDone: false, lagged: false, resync: false, sessionClosed: false };
        const queue: SSEFrame[] = [];
        const parser = new SSEParser({
          onEvent: (f) => queue.push(f),
          onRetry: (ms) => {
            this.#retryMs = ms;
          },
        });
        const reader = res.body?.getReader();
        const decoder = new TextDecoder();
        let readFailed: unknown;
        if (reader) {
          const idle = this.#opts.idleTimeoutMs ?? 45_000;
          try {
            for (;;) {
              let timer: ReturnType<typeof setTimeout> | undefined;
              let chunk: ReadableStreamReadResult<Uint8Array>;
              try {
                if (idle > 0) timer = setTimeout(() => ctl.abort(new IdleTimeout(idle)), idle);
                chunk = await reader.read();
              } finally {
                if (timer !== undefined) clearTimeout(timer);
              }
              if (chunk.done) {
                parser.feed(decoder.decode());
                break;
              }
              parser.feed(decoder.decode(chunk.value, { stream: true }));
              while (queue.length > 0) {
                const ev = this.#accept(queue.shift()!, outcome);
                if (ev) {
                  yield ev;
                  if (this.#closed || this.#reconnectNow) break;
                }
              }
              if (this.#closed || this.#reconnectNow) break;
            }
          } catch (err) {
            readFailed = err;
          } finally {
            ctl.abort();
            try {
              reader.releaseLock();
            } catch {
              // already released or errored: nothing to do
            }
          }
        }
        this.#conn = undefined;
        if (this.#closed) break;
        if (outcome.replayDone) failures = 0;
        if (this.#reconnectNow) continue;
        if (outcome.resync) {
          this.#resyncPending = true;
          continue;
        }
        if (outcome.lagged) {
          this.#reconnectNow = true; // catch up from the log at once
          continue;
        }
        if (!follow && outcome.replayDone) break;
        if (outcome.sessionClosed) closedSeen = true;
        if (this.#transport.kind === 'session' && closedSeen && closedReconnects < 3) {
          // The session is closed: the daemon answers 204 once its log is
          // drained (events may still follow session.closed, e.g. the
          // agent's executor_status). Ask at once instead of backing off.
          closedReconnects++;
          this.#reconnectNow = true;
          continue;
        }
        // The connection ended (server restart, proxy, network): come back.
        failures++;
        this.#report(
          readFailed !== undefined
            ? new TetherNetworkError(`event stream interrupted: ${errMessage(readFailed)}`, { cause: readFailed })
            : new TetherNetworkError('event stream ended by the server'),
          failures,
        );
      }
    } finally {
      this.#conn?.abort();
      this.#conn = undefined;
      this.#closed = true;
      this.#detach();
      this.#setState('closed');
    }
  }

  #report(err: unknown, attempt: number): void {
    const max = this.#opts.maxRetries;
    try {
      this.#opts.onError?.(err, attempt);
    } catch {
      // ignore observer failures
    }
    if (max !== undefined && attempt > max) throw err;
  }

  #accept(
    frame: SSEFrame,
    outcome: { replayDone: boolean; lagged: boolean; resync: boolean; sessionClosed: boolean },
  ): StreamEvent | undefined {
    let data: unknown;
    try {
      data = JSON.parse(frame.data);
    } catch {
      return undefined; // not JSON: not a Tether frame
    }
    const type = frame.event;
    if (frame.id !== undefined && frame.id !== '') {
      const c = parseCursor(frame.id);
      if (c && this.#last && c.epoch === this.#last.epoch && c.seq <= this.#last.seq) {
        return undefined; // already delivered
      }
      if (!c && frame.id === this.#cursor) return undefined;
      this.#cursor = frame.id;
      this.#last = c;
      if (type === 'session.closed') outcome.sessionClosed = true;
      if (!KNOWN_TYPES.has(type) || CONTROL_TYPES.has(type)) return undefined; // newer daemon: skip
      return { type, id: frame.id, data } as StreamEvent;
    }
    if (!CONTROL_TYPES.has(type)) return undefined; // an id-less durable event is not ours
    const d = (data ?? {}) as Record<string, unknown>;
    switch (type) {
      case 'replay_complete':
        outcome.replayDone = true;
        this.#advance(d.cursor);
        this.#setState('open');
        break;
      case 'stream_lagged':
        outcome.lagged = true;
        this.#advance(d.cursor);
        break;
      case 'resync_required':
        outcome.resync = true;
        this.#resync = d as unknown as ResyncRequiredData;
        this.#resyncPending = true;
        break;
    }
    return { type, data } as StreamEvent;
  }

  /** Moves the cursor forward to a position the server says is delivered. */
  #advance(cursor: unknown): void {
    if (typeof cursor !== 'string') return;
    const c = parseCursor(cursor);
    if (!c) return;
    if (this.#last === undefined ? this.#cursor === undefined : c.epoch === this.#last.epoch && c.seq > this.#last.seq) {
      this.#cursor = cursor;
      this.#last = c;
    }
  }
}

class IdleTimeout extends Error {
  constructor(ms: number) {
    super(`no data for ${ms} ms`);
    this.name = 'IdleTimeout';
  }
}

function errMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

async function readBody(res: Response): Promise<unknown> {
  let text = '';
  try {
    text = await res.text();
  } catch {
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** What `resyncFromSnapshot` needs of a session. */
export interface TranscriptSource {
  transcript(opts?: { signal?: AbortSignal; limit?: number }): Promise<Transcript>;
}

/**
 * The resync path: reloads the session's snapshot (GET
 * /session/{id}/transcript; with `limit`, only its latest page, whose
 * `nextPageToken` leads to older turns) and continues `stream` from the
 * cursor the snapshot is consistent with. Render the transcript, then keep
 * iterating.
 */
export async function resyncFromSnapshot(
  session: TranscriptSource,
  stream: EventStream,
  opts?: { signal?: AbortSignal; limit?: number },
): Promise<Transcript> {
  const t = await session.transcript(opts);
  stream.resyncFrom(t.cursor);
  return t;
}
