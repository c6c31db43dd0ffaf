// One GET /events per browser: the tabs elect a leader (Web Locks) and the
// leader relays events on a BroadcastChannel.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sharedGlobalEvents, type GlobalStreamSource } from '../src/lib/shared-global';
import type { StreamState, TetherEvent } from '../src/state/types';
import { FakeStream, flush } from './fixtures';

/** A minimal Web Locks manager: exclusive, queued, abortable. */
function fakeLocks() {
  const held = new Map<string, Promise<void>>();
  return {
    request(name: string, opts: { signal?: AbortSignal }, cb: () => Promise<void>): Promise<void> {
      const prev = held.get(name) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((r) => (release = r));
      held.set(name, prev.then(() => mine));
      return prev.then(async () => {
        try {
          if (opts.signal?.aborted) throw new DOMException('aborted', 'AbortError');
          await cb();
        } finally {
          release();
        }
      });
    },
  };
}

function source() {
  const streams: FakeStream[] = [];
  const src: GlobalStreamSource = {
    globalEvents: (o) => {
      const s = new FakeStream({ ...(o.cursor ? { cursor: o.cursor } : {}), onStateChange: o.onStateChange as (s: StreamState, p: StreamState) => void });
      streams.push(s);
      return s;
    },
  };
  return { src, streams };
}

const evt = (n: number) => ({ type: 'session.state_changed', id: `g:${n}`, data: { sessionId: 's', state: 'RUNNING' } }) as unknown as TetherEvent;

async function take(it: AsyncIterator<TetherEvent>, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await it.next()).value.id);
  return out;
}

afterEach(() => vi.unstubAllGlobals());

describe('shared global stream', () => {
  it('one tab reads the stream, every tab gets the events and the state, and a new leader takes over', async () => {
    vi.stubGlobal('navigator', { ...globalThis.navigator, locks: fakeLocks() });
    const a = source();
    const b = source();
    const statesB: StreamState[] = [];
    const tabA = sharedGlobalEvents(a.src, 'k', {});
    await flush();
    const tabB = sharedGlobalEvents(b.src, 'k', { onStateChange: (s) => statesB.push(s) });
    await flush();
    expect(a.streams).toHaveLength(1); // A leads
    expect(b.streams).toHaveLength(0); // B follows
    expect([tabA.leading, tabB.leading]).toEqual([true, false]); // A alone notifies
    const itA = tabA[Symbol.asyncIterator]();
    const itB = tabB[Symbol.asyncIterator]();
    a.streams[0]!.setState('open');
    a.streams[0]!.push(evt(1), evt(2));
    expect(await take(itA, 2)).toEqual(['g:1', 'g:2']);
    expect(await take(itB, 2)).toEqual(['g:1', 'g:2']);
    expect(statesB).toContain('open');

    tabA.close(); // the leader's tab closes
    await flush(10);
    expect(a.streams[0]!.closed).toBe(true);
    expect(b.streams).toHaveLength(1); // B leads now
    expect(tabB.leading).toBe(true);
    b.streams[0]!.push(evt(3));
    expect(await take(itB, 1)).toEqual(['g:3']);
    tabB.close();
  });

  it('without Web Locks each tab opens its own stream, from its cursor', async () => {
    vi.stubGlobal('navigator', { ...globalThis.navigator, locks: undefined });
    const a = source();
    const tab = sharedGlobalEvents(a.src, 'k', { cursor: () => Promise.resolve('g:5') });
    const it = tab[Symbol.asyncIterator]();
    const first = it.next();
    await flush();
    expect(a.streams).toHaveLength(1);
    expect(a.streams[0]!.cursor).toBe('g:5');
    expect(tab.leading).toBe(true); // its own stream: it notifies
    a.streams[0]!.push(evt(6));
    expect((await first).value.id).toBe('g:6');
    tab.close();
  });

  it('a leader opens the stream from its tab\'s cursor, a new leader from its own', async () => {
    vi.stubGlobal('navigator', { ...globalThis.navigator, locks: fakeLocks() });
    const a = source();
    const b = source();
    let lists!: (c: string) => void;
    const tabA = sharedGlobalEvents(a.src, 'k', { cursor: () => new Promise<string>((r) => (lists = r)) });
    await flush();
    expect(a.streams).toHaveLength(0); // waits for the lists' cursor
    lists('g:40');
    await flush();
    expect(a.streams[0]!.cursor).toBe('g:40');
    let atB = 'g:41';
    const tabB = sharedGlobalEvents(b.src, 'k', { cursor: () => atB });
    await flush();
    atB = 'g:42'; // B applied a relayed event
    tabA.close();
    await flush(10);
    expect(b.streams[0]!.cursor).toBe('g:42'); // not the beginning of the log
    tabB.close();
  });
});
