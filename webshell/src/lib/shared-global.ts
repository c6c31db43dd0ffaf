// One global event stream per browser, shared by all tabs of the shell.
//
// Browsers allow six HTTP/1.1 connections per host, and every event
// stream holds one for as long as it is open. With a global stream in each
// tab plus one stream per chat pane, three tabs exhaust the budget and
// every other request (transcript, continue, ...) waits. So the tabs elect
// a leader with the Web Locks API; only the leader opens GET /events and
// it relays what it reads (and its connection state) to the other tabs on
// a BroadcastChannel. When the leader's tab closes, its lock is released
// and another tab takes over. Without locks or BroadcastChannel (an
// insecure origin), each tab simply opens its own stream.
//
// A stream opens from `cursor()`: the position the caller's state is at
// (the lists' global cursor once they are loaded, then the last event it
// applied), so neither a page load nor a new leader replays the log from
// its beginning. Tabs get events relayed from wherever the leader is;
// each drops what its state already holds (by id).
import type { StreamState, TetherEvent } from '../state/types';

export interface GlobalStreamSource {
  globalEvents(opts: {
    types?: string[];
    cursor?: string;
    onStateChange?: (s: StreamState, prev: StreamState) => void;
  }): AsyncIterable<TetherEvent> & { close(): void; resyncFrom?(cursor: string): void; readonly state?: StreamState };
}

export interface SharedStreamOptions {
  types?: string[];
  /**
   * Where to start when this tab opens the stream: called (and awaited)
   * each time it does, so a tab that takes over later starts from where
   * its state is. Undefined: the beginning of the log.
   */
  cursor?: () => Promise<string | undefined> | string | undefined;
  onStateChange?: (s: StreamState, prev: StreamState) => void;
}

export interface SharedStream extends AsyncIterable<TetherEvent> {
  close(): void;
  /** Continues this tab's own stream from a cursor (no-op when a leader relays). */
  resyncFrom?(cursor: string): void;
  /**
   * Whether this tab reads GET /events itself (it leads, or streams on its
   * own): what one tab of the browser must do once, such as showing a
   * notification, the leader does.
   */
  readonly leading: boolean;
}

type Msg = { kind: 'event'; event: TetherEvent } | { kind: 'state'; state: StreamState } | { kind: 'hello' };

/** An async queue: push from callbacks, iterate once. */
class Queue<T> {
  #items: T[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  push(v: T): void {
    if (this.#ended) return;
    this.#items.push(v);
    this.#wake?.();
  }
  end(): void {
    this.#ended = true;
    this.#wake?.();
  }
  async *iterate(): AsyncGenerator<T> {
    for (;;) {
      if (this.#items.length > 0) {
        yield this.#items.shift()!;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((r) => (this.#wake = r));
      this.#wake = undefined;
    }
  }
}

function hash(s: string): string {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return (h >>> 0).toString(36);
}

/** This tab's own stream, opened once `opts.cursor()` has answered. */
function ownStream(source: GlobalStreamSource, opts: SharedStreamOptions): SharedStream {
  let stream: ReturnType<GlobalStreamSource['globalEvents']> | undefined;
  let closed = false;
  return {
    async *[Symbol.asyncIterator]() {
      const cursor = await opts.cursor?.();
      if (closed) return;
      stream = source.globalEvents({ types: opts.types, ...(cursor ? { cursor } : {}), onStateChange: opts.onStateChange });
      yield* stream;
    },
    close() {
      closed = true;
      stream?.close();
    },
    resyncFrom(cursor: string) {
      stream?.resyncFrom?.(cursor);
    },
    leading: true,
  };
}

export function sharedGlobalEvents(source: GlobalStreamSource, key: string, opts: SharedStreamOptions): SharedStream {
  const locks = (globalThis.navigator as Navigator | undefined)?.locks;
  if (!locks || typeof BroadcastChannel === 'undefined') return ownStream(source, opts);

  const name = `tether-global-${hash(key)}`;
  const channel = new BroadcastChannel(name);
  const queue = new Queue<TetherEvent>();
  const abort = new AbortController();
  let state: StreamState = 'connecting';
  let leading: { close(): void } | undefined;
  let closed = false;

  const setState = (s: StreamState) => {
    if (s === state) return;
    const prev = state;
    state = s;
    opts.onStateChange?.(s, prev);
  };

  channel.onmessage = (m: MessageEvent<Msg>) => {
    const msg = m.data;
    if (msg.kind === 'hello') {
      if (leading) channel.postMessage({ kind: 'state', state } satisfies Msg);
      return;
    }
    if (leading) return; // the leader reads its own stream
    if (msg.kind === 'event') queue.push(msg.event);
    else if (msg.kind === 'state') setState(msg.state);
  };
  channel.postMessage({ kind: 'hello' } satisfies Msg);

  const lead = () => {
    locks
      .request(name, { signal: abort.signal }, async () => {
        if (closed) return;
        const cursor = await opts.cursor?.();
        if (closed) return;
        const stream = source.globalEvents({
          types: opts.types,
          ...(cursor ? { cursor } : {}),
          onStateChange: (s) => {
            setState(s);
            if (!closed) channel.postMessage({ kind: 'state', state: s } satisfies Msg);
          },
        });
        leading = stream;
        try {
          for await (const ev of stream) {
            if (closed) break;
            if (ev.type === 'resync_required') {
              // The global log was reset: go on from its head; the lists reload.
              stream.resyncFrom?.((ev.data as { cursor: string }).cursor);
            }
            queue.push(ev);
            channel.postMessage({ kind: 'event', event: ev } satisfies Msg);
          }
        } finally {
          leading = undefined;
          stream.close();
        }
      })
      .catch(() => {
        // aborted by close(), or the stream failed for good
      })
      .finally(() => {
        // The stream ended (it should not): try to lead again, later.
        if (!closed) setTimeout(lead, 2000);
      });
  };
  lead();

  return {
    [Symbol.asyncIterator]: () => queue.iterate(),
    get leading() {
      return leading !== undefined;
    },
    close() {
      closed = true;
      abort.abort();
      leading?.close();
      channel.close();
      queue.end();
    },
  };
}
