// EventStream against a scripted fetch: reconnects, dedupe, resync,
// lag, 204/401/404/5xx, abort, idle timeout and backoff, deterministic.
import { describe, expect, it } from 'vitest';
import { EventStream, TetherNetworkError, TetherProblem, type StreamEvent, type StreamState } from '../src/index.js';

const enc = new TextEncoder();

class FakeBody {
  #c!: ReadableStreamDefaultController<Uint8Array>;
  readonly stream = new ReadableStream<Uint8Array>({ start: (c) => void (this.#c = c) });
  closed = false;
  push(s: string): this {
    if (!this.closed) this.#c.enqueue(enc.encode(s));
    return this;
  }
  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.#c.close();
  }
  fail(e: unknown): void {
    if (this.closed) return;
    this.closed = true;
    this.#c.error(e);
  }
}

interface Req {
  url: string;
  headers: Record<string, string>;
  at: number;
}

type Handler = (req: Req) => Response | FakeBody | Error | Promise<Response | FakeBody | Error>;

/** A fetch that answers the n-th request with handlers[n] (the last one repeats). */
function scriptedFetch(handlers: Handler[]) {
  const requests: Req[] = [];
  const fetchImpl = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req: Req = { url: String(input), headers: { ...(init?.headers as Record<string, string>) }, at: Date.now() };
    requests.push(req);
    const h = handlers[Math.min(requests.length - 1, handlers.length - 1)]!;
    const out = await h(req);
    if (out instanceof Error) throw out;
    if (out instanceof FakeBody) {
      init?.signal?.addEventListener('abort', () => out.fail(new DOMException('aborted', 'AbortError')));
      return new Response(out.stream, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
    }
    return out;
  }) as typeof fetch;
  return { fetchImpl, requests };
}

function stream(fetchImpl: typeof fetch, opts: ConstructorParameters<typeof EventStream>[1] = {}, kind: 'session' | 'global' = 'session') {
  return new EventStream(
    { url: 'http://tether.test/session/s/events', headers: () => ({ Authorization: 'Bearer t' }), fetch: fetchImpl, kind },
    { backoff: { initialMs: 5, maxMs: 20, jitter: 0 }, ...opts },
  );
}

const ev = (seq: number, type = 'message.chunk', epoch = 'E') =>
  `id: ${epoch}:${seq}\nevent: ${type}\ndata: {"messageId":1,"role":"agent","text":"${seq}","promptId":"p"}\n\n`;
const replayDone = (cursor: string) => `event: replay_complete\ndata: {"cursor":"${cursor}"}\n\n`;
const problem = (status: number, code: string) =>
  new Response(JSON.stringify({ type: 'about:blank', title: 'x', status, code, detail: `d-${code}` }), {
    status,
    headers: { 'Content-Type': 'application/problem+json' },
  });

async function take(s: AsyncIterable<StreamEvent>, n: number): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  if (n <= 0) return out;
  for await (const e of s) {
    out.push(e);
    if (out.length >= n) break;
  }
  return out;
}

const ids = (evs: StreamEvent[]) => evs.map((e) => ('id' in e ? e.id : e.type));

describe('EventStream (scripted fetch)', () => {
  it('yields typed events, keeps the cursor, reports states, ends after replay with follow=false', async () => {
    const states: string[] = [];
    const { fetchImpl, requests } = scriptedFetch([
      () => {
        const b = new FakeBody();
        b.push('retry: 2000\n\n' + ev(1, 'session.created') + ev(2) + ': ping\n\n' + replayDone('E:2'));
        b.end();
        return b;
      },
    ]);
    const s = stream(fetchImpl, { follow: false, onStateChange: (st) => states.push(st) });
    expect(s.state).toBe('connecting');
    const got: StreamEvent[] = [];
    for await (const e of s) got.push(e);
    expect(ids(got)).toEqual(['E:1', 'E:2', 'replay_complete']);
    expect(got[0]!.type).toBe('session.created');
    expect(s.cursor).toBe('E:2');
    expect(s.serverRetryMs).toBe(2000);
    expect(states).toEqual(['catching_up', 'open', 'closed']);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.headers.Authorization).toBe('Bearer t');
    expect(requests[0]!.headers['Last-Event-ID']).toBeUndefined();
  });

  it('sends the initial cursor as Last-Event-ID', async () => {
    const { fetchImpl, requests } = scriptedFetch([() => ((b) => (b.push(replayDone('E:9')), b.end(), b))(new FakeBody())]);
    const s = stream(fetchImpl, { cursor: 'E:9', follow: false });
    await take(s, 10);
    expect(requests[0]!.headers['Last-Event-ID']).toBe('E:9');
  });

  it('reconnects when the server drops the connection, with Last-Event-ID, and never yields a duplicate', async () => {
    const { fetchImpl, requests } = scriptedFetch([
      () => {
        const b = new FakeBody();
        b.push(ev(1) + ev(2) + replayDone('E:2') + ev(3));
        setTimeout(() => b.end(), 5); // server restart
        return b;
      },
      () => {
        // A sloppy server replays from before the cursor: 2 and 3 are old.
        const b = new FakeBody();
        b.push(ev(2) + ev(3) + ev(4) + replayDone('E:4') + ev(5));
        return b;
      },
    ]);
    const errors: unknown[] = [];
    const s = stream(fetchImpl, { onError: (e) => errors.push(e) });
    const got = await take(s, 7);
    expect(ids(got)).toEqual(['E:1', 'E:2', 'replay_complete', 'E:3', 'E:4', 'replay_complete', 'E:5']);
    expect(requests[1]!.headers['Last-Event-ID']).toBe('E:3');
    expect(errors[0]).toBeInstanceOf(TetherNetworkError);
    expect(s.state).toBe('closed'); // break closed it
  });

  it('retries network errors and 5xx with backoff, then resumes', async () => {
    const { fetchImpl, requests } = scriptedFetch([
      () => new TypeError('fetch failed'),
      () => problem(503, 'shutting_down'),
      () => new TypeError('fetch failed'),
      () => ((b) => (b.push(ev(1) + replayDone('E:1')), b))(new FakeBody()),
    ]);
    const attempts: number[] = [];
    const s = stream(fetchImpl, { onError: (_e, n) => attempts.push(n) });
    const got = await take(s, 2);
    expect(ids(got)).toEqual(['E:1', 'replay_complete']);
    expect(attempts).toEqual([1, 2, 3]);
    expect(requests).toHaveLength(4);
  });

  it('backoff grows exponentially and is capped', async () => {
    const { fetchImpl, requests } = scriptedFetch([() => new TypeError('down')]);
    const s = new EventStream(
      { url: 'http://x/events', headers: () => ({}), fetch: fetchImpl, kind: 'global' },
      { backoff: { initialMs: 40, maxMs: 160, factor: 2, jitter: 0 }, maxRetries: 5 },
    );
    await expect(take(s, 1)).rejects.toBeInstanceOf(TetherNetworkError);
    const gaps = requests.slice(1).map((r, i) => r.at - requests[i]!.at);
    expect(gaps).toHaveLength(5);
    const want = [40, 80, 160, 160, 160];
    gaps.forEach((g, i) => {
      expect(g).toBeGreaterThanOrEqual(want[i]! - 5);
      expect(g).toBeLessThan(want[i]! + 150);
    });
  });

  it('jitter keeps delays within [d*(1-jitter), d]', async () => {
    const { fetchImpl, requests } = scriptedFetch([() => new TypeError('down')]);
    const s = new EventStream(
      { url: 'http://x/events', headers: () => ({}), fetch: fetchImpl, kind: 'global' },
      { backoff: { initialMs: 100, maxMs: 100, jitter: 0.5 }, maxRetries: 4 },
    );
    await expect(take(s, 1)).rejects.toThrow();
    for (let i = 1; i < requests.length; i++) {
      const g = requests[i]!.at - requests[i - 1]!.at;
      expect(g).toBeGreaterThanOrEqual(45);
      expect(g).toBeLessThan(250);
    }
  });

  it('ends on 204 (closed session fully delivered)', async () => {
    const { fetchImpl, requests } = scriptedFetch([() => new Response(null, { status: 204 })]);
    const s = stream(fetchImpl);
    expect(await take(s, 5)).toEqual([]);
    expect(s.state).toBe('closed');
    expect(requests).toHaveLength(1);
  });

  it.each([
    [401, 'unauthorized'],
    [404, 'session_not_found'],
    [400, 'invalid_cursor'],
  ])('throws a TetherProblem for %i without reconnecting', async (status, code) => {
    const { fetchImpl, requests } = scriptedFetch([() => problem(status, code)]);
    const s = stream(fetchImpl);
    const err = await take(s, 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TetherProblem);
    expect((err as TetherProblem).status).toBe(status);
    expect((err as TetherProblem).code).toBe(code);
    expect((err as TetherProblem).detail).toBe(`d-${code}`);
    expect(requests).toHaveLength(1);
    expect(s.state).toBe('closed');
  });

  it('surfaces resync_required, waits for resyncFrom, then continues from the new cursor', async () => {
    const { fetchImpl, requests } = scriptedFetch([
      () => {
        const b = new FakeBody();
        b.push('event: resync_required\ndata: {"reason":"epoch_mismatch","epoch":"F","cursor":"F:7"}\n\n');
        b.end();
        return b;
      },
      () => ((b) => (b.push(ev(5, 'message.chunk', 'F') + ev(8, 'message.chunk', 'F') + replayDone('F:8')), b))(new FakeBody()),
    ]);
    const s = stream(fetchImpl, { cursor: 'OLD:40' });
    const it = s[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.value?.type).toBe('resync_required');
    if (first.value?.type === 'resync_required') expect(first.value.data.epoch).toBe('F');
    // Without resyncFrom the stream waits (does not reconnect by itself).
    const next = it.next();
    await new Promise((r) => setTimeout(r, 80));
    expect(requests).toHaveLength(1);
    expect(s.state).toBe('connecting');
    expect(s.pendingResync?.reason).toBe('epoch_mismatch');
    s.resyncFrom('F:4');
    const a = await next;
    expect(a.value && 'id' in a.value ? a.value.id : undefined).toBe('F:5');
    expect(requests[1]!.headers['Last-Event-ID']).toBe('F:4');
    expect((await it.next()).value).toMatchObject({ id: 'F:8' });
    expect(s.cursor).toBe('F:8');
    await it.return!();
  });

  it('resyncFrom inside the loop body (the resyncFromSnapshot pattern) continues at once', async () => {
    const { fetchImpl, requests } = scriptedFetch([
      () => ((b) => (b.push('event: resync_required\ndata: {"reason":"cursor_ahead","epoch":"E","cursor":"E:3"}\n\n'), b))(new FakeBody()),
      () => ((b) => (b.push(ev(3) + ev(4)), b))(new FakeBody()),
    ]);
    const s = stream(fetchImpl, { cursor: 'E:99' });
    const got: StreamEvent[] = [];
    for await (const e of s) {
      got.push(e);
      if (e.type === 'resync_required') s.resyncFrom(e.data.cursor);
      if (got.length === 2) break;
    }
    expect(ids(got)).toEqual(['resync_required', 'E:4']); // E:3 is the snapshot's own position
    expect(requests[1]!.headers['Last-Event-ID']).toBe('E:3');
  });

  it('reconnects at once from the lagged cursor on stream_lagged', async () => {
    const { fetchImpl, requests } = scriptedFetch([
      () => ((b) => (b.push(ev(1) + replayDone('E:1') + ev(2) + 'event: stream_lagged\ndata: {"cursor":"E:2"}\n\n'), b.end(), b))(new FakeBody()),
      () => ((b) => (b.push(ev(3) + replayDone('E:3')), b))(new FakeBody()),
    ]);
    const errors: unknown[] = [];
    const s = stream(fetchImpl, { onError: (e) => errors.push(e), backoff: { initialMs: 5000 } });
    const t0 = Date.now();
    const got = await take(s, 5);
    expect(ids(got)).toEqual(['E:1', 'replay_complete', 'E:2', 'stream_lagged', 'E:3']);
    expect(Date.now() - t0).toBeLessThan(1000); // no backoff
    expect(errors).toEqual([]);
    expect(requests[1]!.headers['Last-Event-ID']).toBe('E:2');
  });

  it('advances the cursor to replay_complete (filtered types count as delivered)', async () => {
    const { fetchImpl } = scriptedFetch([() => ((b) => (b.push(ev(2) + replayDone('E:10')), b.end(), b))(new FakeBody())]);
    const s = stream(fetchImpl, { follow: false });
    await take(s, 10);
    expect(s.cursor).toBe('E:10');
  });

  it('the abort signal ends a pending iteration (returns, no throw)', async () => {
    const { fetchImpl } = scriptedFetch([() => ((b) => (b.push(ev(1)), b))(new FakeBody())]);
    const ac = new AbortController();
    const s = stream(fetchImpl, { signal: ac.signal });
    const got: StreamEvent[] = [];
    setTimeout(() => ac.abort(), 50);
    for await (const e of s) got.push(e);
    expect(ids(got)).toEqual(['E:1']);
    expect(s.state).toBe('closed');
  });

  it('an already aborted signal yields nothing; close() before iteration too', async () => {
    const { fetchImpl, requests } = scriptedFetch([() => new FakeBody()]);
    const s = stream(fetchImpl, { signal: AbortSignal.abort() });
    expect(await take(s, 1)).toEqual([]);
    const s2 = stream(fetchImpl);
    s2.close();
    expect(await take(s2, 1)).toEqual([]);
    expect(requests).toHaveLength(0);
  });

  it('close() during a backoff wait ends the iteration promptly', async () => {
    const { fetchImpl } = scriptedFetch([() => new TypeError('down')]);
    const s = stream(fetchImpl, { backoff: { initialMs: 10_000, jitter: 0 } });
    setTimeout(() => s.close(), 50);
    const t0 = Date.now();
    expect(await take(s, 1)).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('replaces a connection that stays silent past idleTimeoutMs', async () => {
    const { fetchImpl, requests } = scriptedFetch([
      () => ((b) => (b.push(ev(1)), b))(new FakeBody()), // then silence
      () => ((b) => (b.push(ev(2)), b))(new FakeBody()),
    ]);
    const s = stream(fetchImpl, { idleTimeoutMs: 60 });
    const got = await take(s, 2);
    expect(ids(got)).toEqual(['E:1', 'E:2']);
    expect(requests[1]!.headers['Last-Event-ID']).toBe('E:1');
  });

  it('heartbeat comments keep an idle connection alive', async () => {
    let body!: FakeBody;
    const { fetchImpl, requests } = scriptedFetch([() => (body = new FakeBody().push(ev(1)))]);
    const s = stream(fetchImpl, { idleTimeoutMs: 100 });
    const timer = setInterval(() => body?.push(': ping\n\n'), 30);
    setTimeout(() => body.push(ev(2)), 350);
    const got = await take(s, 2);
    clearInterval(timer);
    expect(ids(got)).toEqual(['E:1', 'E:2']);
    expect(requests).toHaveLength(1);
  });

  it('after session.closed a session stream asks again at once and ends on 204, delivering trailing events', async () => {
    const closedFrame = 'id: E:3\nevent: session.closed\ndata: {"state":"COMPLETED","sessionId":"s"}\n\n';
    const a = scriptedFetch([
      () => ((b) => (b.push(ev(2) + replayDone('E:2') + closedFrame), b.end(), b))(new FakeBody()),
      () => ((b) => (b.push(ev(4, 'session.executor_status') + replayDone('E:4')), b.end(), b))(new FakeBody()),
      () => new Response(null, { status: 204 }),
    ]);
    const s = stream(a.fetchImpl, { backoff: { initialMs: 5000 } });
    const t0 = Date.now();
    expect(ids(await take(s, 10))).toEqual(['E:2', 'replay_complete', 'E:3', 'E:4', 'replay_complete']);
    expect(Date.now() - t0).toBeLessThan(1000); // no backoff on the way to the 204
    expect(a.requests.map((r) => r.headers['Last-Event-ID'])).toEqual([undefined, 'E:3', 'E:4']);
    expect(s.state).toBe('closed');

    // The global stream carries every session's session.closed: it just goes on.
    const g = scriptedFetch([
      () => ((b) => (b.push(closedFrame), b.end(), b))(new FakeBody()),
      () => ((b) => (b.push(ev(4)), b))(new FakeBody()),
    ]);
    const gs = stream(g.fetchImpl, {}, 'global');
    expect(ids(await take(gs, 2))).toEqual(['E:3', 'E:4']);
  });

  it('skips unknown event types and non-JSON data but keeps their cursor', async () => {
    const { fetchImpl } = scriptedFetch([
      () =>
        ((b) => (
          b.push('id: E:1\nevent: future.thing\ndata: {}\n\n' + 'id: E:2\nevent: message.chunk\ndata: not json\n\n' + ev(3) + replayDone('E:3')),
          b.end(),
          b
        ))(new FakeBody()),
    ]);
    const s = stream(fetchImpl, { follow: false });
    const got = await take(s, 10);
    expect(ids(got)).toEqual(['E:3', 'replay_complete']);
  });

  it('gives up after maxRetries consecutive failures', async () => {
    const { fetchImpl, requests } = scriptedFetch([() => new TypeError('refused')]);
    const s = stream(fetchImpl, { maxRetries: 2 });
    await expect(take(s, 1)).rejects.toBeInstanceOf(TetherNetworkError);
    expect(requests).toHaveLength(3);
  });

  it('can be iterated only once', () => {
    const { fetchImpl } = scriptedFetch([() => new FakeBody()]);
    const s = stream(fetchImpl);
    s[Symbol.asyncIterator]();
    expect(() => s[Symbol.asyncIterator]()).toThrow(/only once/);
    s.close();
  });

  it('reconnect() drops the connection and resumes from the cursor', async () => {
    const { fetchImpl, requests } = scriptedFetch([
      () => ((b) => (b.push(ev(1) + ev(2)), b))(new FakeBody()),
      () => ((b) => (b.push(ev(2) + ev(3)), b))(new FakeBody()),
    ]);
    const s = stream(fetchImpl);
    const got: StreamEvent[] = [];
    const states: StreamState[] = [];
    s.onStateChange = (st) => states.push(st);
    for await (const e of s) {
      got.push(e);
      if (got.length === 1) s.reconnect();
      if (got.length === 3) break;
    }
    // E:2 arrives once: on the first connection it is dropped unread or read, never twice.
    expect(ids(got)).toEqual(['E:1', 'E:2', 'E:3']);
    expect(requests[1]!.headers['Last-Event-ID']).toBe('E:1');
    expect(states).toContain('connecting');
  });
});
