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
import type { StreamState, TetherEvent } from '../state/types';

export interface GlobalStreamSource {
  globalEvents(opts: {
    types?: string[];
    onStateChange?: (s: StreamState, prev: StreamState) => void;
  }): AsyncIterable<TetherEvent> & { close(): void; resyncFrom?(cursor: string): void; readonly state?: StreamState };
}

export interface SharedStream extends AsyncIterable<TetherEvent> {
  close(): void;
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

export function sharedGlobalEvents(
  source: GlobalStreamSource,
  key: string,
  opts: { types?: string[]; onStateChange?: (s: StreamState, prev: StreamState) => void },
): SharedStream {
  const locks = (globalThis.navigator as Navigator | undefined)?.locks;
  if (!locks || typeof BroadcastChannel === 'undefined') return source.globalEvents(opts);

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
        const stream = source.globalEvents({
          types: opts.types,
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
    close() {
      closed = true;
      abort.abort();
      leading?.close();
      channel.close();
      queue.end();
    },
  };
}
