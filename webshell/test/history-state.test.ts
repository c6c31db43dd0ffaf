// Transcript pages in the pane's state: the snapshot is the latest page and
// keeps its nextPageToken; an older page goes in front of what is loaded,
// once, without doubling anything and without losing what the live stream
// brought since the first page; a reload starts over from the latest page.
// And the controller that asks for them: a page at a time, one at a time.
import { describe, expect, it } from 'vitest';
import { SessionController, TRANSCRIPT_PAGE_TURNS } from '../src/state/session-controller';
import { toolCallKey, type SessionViewState } from '../src/state/session-state';
import { turnCount } from '../src/state/transcript-view';
import type { Message, ToolCall, Transcript, Turn } from '../src/state/types';
import { turnRanges } from '../src/state/workspace';
import { deferred, ev, evAction, FakeApi, flush, fold, loaded, transcript } from './fixtures';

const SID = 's1';

/** Turn n (promptId `t<n>`, seq n), created at second n of the day; its user message is 10n, its reply 10n+1. */
const at = (n: number, ms = 0) => new Date(Date.UTC(2026, 0, 1, 0, 0, n, ms)).toISOString();
const turn = (n: number, over: Partial<Turn> = {}): Turn => ({ promptId: `t${n}`, seq: n, kind: 'prompt', state: 'completed', createdAt: at(n), endedAt: at(n, 500), ...over });
const msgs = (n: number): Message[] => [
  { id: 10 * n, promptId: `t${n}`, role: 'user', text: `/echo ${n}`, createdAt: at(n, 100) },
  { id: 10 * n + 1, promptId: `t${n}`, role: 'agent', text: `${n}`, createdAt: at(n, 200) },
];
const call = (n: number): ToolCall => ({ id: 'tool-1', promptId: `t${n}`, title: `read ${n}`, kind: 'read', status: 'completed', interrupted: false, createdAt: at(n, 150) });

/** The page of turns from..to (inclusive) with their messages and one tool call each. */
function page(from: number, to: number, next?: string, seq = 100): Transcript {
  const ns = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  return transcript(SID, seq, { turns: ns.map((n) => turn(n)), messages: ns.flatMap(msgs), toolCalls: ns.map(call), ...(next ? { nextPageToken: next } : {}) });
}

/** A pane loaded from the latest page: turns 4..6, and a token for the older ones. */
const latest = (): SessionViewState => loaded(SID, { seq: 100, transcript: page(4, 6, 'tok-3') });

const older = (s: SessionViewState, token: string, p: Transcript) => fold(s, { type: 'load/older', sessionId: SID, gen: s.loadGen, token, page: p });

/** What the timeline shows, as the ids of its messages (turn ends and tool calls left out). */
const shownMessages = (s: SessionViewState) => s.timeline.flatMap((x) => (x.type === 'message' ? [x.id] : []));

describe('the latest page first', () => {
  it('the snapshot keeps its nextPageToken; the whole transcript (no token) has no older page', () => {
    expect(latest().history).toMatchObject({ next: 'tok-3', pages: 0, loading: false });
    expect(loaded(SID, { transcript: page(1, 3) }).history.next).toBeUndefined();
  });

  it('turns keep their seq (from the page and from turn.queued)', () => {
    let s = latest();
    s = fold(s, evAction(s, ev(SID, 101, 'turn.queued', { promptId: 't7', kind: 'prompt', seq: 7 })));
    expect(s.turnOrder.map((id) => s.turns[id]!.seq)).toEqual([4, 5, 6, 7]);
    // A later event without it keeps it.
    s = fold(s, evAction(s, ev(SID, 102, 'turn.started', { promptId: 't7', kind: 'prompt' })));
    expect(s.turns.t7!.seq).toBe(7);
  });
});

describe('an older page', () => {
  it('goes in front: turns by seq, messages, tool calls and timeline; its token becomes the next', () => {
    const s = older(latest(), 'tok-3', page(1, 3));
    expect(s.turnOrder).toEqual(['t1', 't2', 't3', 't4', 't5', 't6']);
    expect(shownMessages(s)).toEqual([10, 11, 20, 21, 30, 31, 40, 41, 50, 51, 60, 61]);
    expect(s.toolCalls[toolCallKey('t1', 'tool-1')]?.title).toBe('read 1');
    expect(s.timeline.filter((x) => x.type === 'tool')).toHaveLength(6);
    expect(s.timeline.filter((x) => x.type === 'turn-end').map((x) => x.id)).toEqual(['t1', 't2', 't3', 't4', 't5', 't6']);
    expect(s.history).toMatchObject({ next: undefined, pages: 1, loading: false });
  });

  it('pages go on back to the first turn, each token once', () => {
    let s = loaded(SID, { seq: 100, transcript: page(7, 9, 'tok-6') });
    s = older(s, 'tok-6', page(4, 6, 'tok-3'));
    expect(s.history.next).toBe('tok-3');
    // The same page again (a doubled answer): dropped, its token is spent.
    const again = older(s, 'tok-6', page(4, 6, 'tok-3'));
    expect(again).toBe(s);
    s = older(s, 'tok-3', page(1, 3));
    expect(s.turnOrder).toEqual(['t1', 't2', 't3', 't4', 't5', 't6', 't7', 't8', 't9']);
    expect(shownMessages(s)).toHaveLength(18);
    expect(s.history.pages).toBe(2);
  });

  it('adds nothing twice, and what the view holds wins (messages by id, turns by promptId, tool calls by turn and id)', () => {
    let s = latest();
    // The reply of turn 4 grew on the stream after the first page.
    s = fold(s, evAction(s, ev(SID, 101, 'message.chunk', { messageId: 41, promptId: 't4', role: 'agent', text: ' and more' })));
    const overlap = page(3, 4);
    const got = older(s, 'tok-3', overlap);
    expect(got.turnOrder).toEqual(['t3', 't4', 't5', 't6']);
    expect(got.messages[41]!.text).toBe('4 and more');
    expect(got.timeline.filter((x) => x.type === 'message' && x.id === 41)).toHaveLength(1);
    expect(got.timeline.filter((x) => x.type === 'tool' && x.id === toolCallKey('t4', 'tool-1'))).toHaveLength(1);
    expect(got.timeline.filter((x) => x.type === 'turn-end' && x.id === 't4')).toHaveLength(1);
    expect(shownMessages(got)).toEqual([30, 31, 40, 41, 50, 51, 60, 61]);
    // The same tool call id in another turn is another call.
    expect(got.toolCalls[toolCallKey('t3', 'tool-1')]).toBeDefined();
  });

  it('keeps what the live stream brought since the first page, after it', () => {
    let s = latest();
    s = fold(
      s,
      evAction(s, ev(SID, 101, 'turn.queued', { promptId: 't7', kind: 'prompt', seq: 7 })),
      evAction(s, ev(SID, 102, 'turn.started', { promptId: 't7', kind: 'prompt' })),
      evAction(s, ev(SID, 103, 'message.added', { messageId: 70, promptId: 't7', role: 'user', text: '/echo 7' })),
      evAction(s, ev(SID, 104, 'message.chunk', { messageId: 71, promptId: 't7', role: 'agent', text: 'sev' })),
    );
    s = older(s, 'tok-3', page(1, 3));
    // The stream goes on after the merge, from where it was.
    s = fold(s, evAction(s, ev(SID, 105, 'message.chunk', { messageId: 71, promptId: 't7', role: 'agent', text: 'en' })));
    s = fold(s, evAction(s, ev(SID, 104, 'message.chunk', { messageId: 71, promptId: 't7', role: 'agent', text: 'en' }))); // a replay: once
    expect(s.seq).toBe(105);
    expect(s.turnOrder).toEqual(['t1', 't2', 't3', 't4', 't5', 't6', 't7']);
    expect(s.turns.t7!.state).toBe('running');
    expect(s.messages[71]!.text).toBe('seven');
    expect(shownMessages(s)).toEqual([10, 11, 20, 21, 30, 31, 40, 41, 50, 51, 60, 61, 70, 71]);
    expect(turnCount(s)).toBe(7);
  });

  it("is dropped when it is another load's: a reload starts over from the latest page", () => {
    let s = latest();
    s = fold(s, { type: 'older/start', sessionId: SID, gen: s.loadGen, token: 'tok-3' });
    const gen = s.loadGen;
    s = fold(s, { type: 'load/start', sessionId: SID, gen: gen + 1 });
    s = fold(s, { type: 'load/snapshot', sessionId: SID, gen: gen + 1, transcript: page(5, 7, 'tok-4', 120) });
    expect(s.history).toMatchObject({ next: 'tok-4', pages: 0, loading: false });
    expect(s.turnOrder).toEqual(['t5', 't6', 't7']);
    // The page asked for before the reload lands now: not merged.
    expect(fold(s, { type: 'load/older', sessionId: SID, gen, token: 'tok-3', page: page(1, 3) })).toBe(s);
    // A reload after older pages were merged forgets them too.
    s = older(s, 'tok-4', page(2, 4, 'tok-1'));
    expect(s.turnOrder[0]).toBe('t2');
    s = fold(s, { type: 'load/start', sessionId: SID, gen: gen + 2 }, { type: 'load/snapshot', sessionId: SID, gen: gen + 2, transcript: page(5, 7, 'tok-4', 130) });
    expect(s.turnOrder).toEqual(['t5', 't6', 't7']);
    expect(shownMessages(s)).toEqual([50, 51, 60, 61, 70, 71]);
    expect(s.history.next).toBe('tok-4');
  });

  it('is asked once at a time; a failure stays until asked again', () => {
    let s = latest();
    const start = { type: 'older/start', sessionId: SID, gen: s.loadGen, token: 'tok-3' } as const;
    s = fold(s, start);
    expect(s.history.loading).toBe(true);
    expect(fold(s, start)).toBe(s);
    // Only the next page's token starts a read.
    expect(fold(latest(), { ...start, token: 'tok-1' }).history.loading).toBe(false);
    s = fold(s, { type: 'older/failed', sessionId: SID, gen: s.loadGen, token: 'tok-3', error: 'HTTP 503' });
    expect(s.history).toMatchObject({ loading: false, error: 'HTTP 503', next: 'tok-3' });
    s = fold(s, start);
    expect(s.history).toMatchObject({ loading: true, error: undefined });
    s = older(s, 'tok-3', page(1, 3));
    expect(s.history).toMatchObject({ loading: false, error: undefined, next: undefined });
  });

  it('takes the rewind marks the stream gave since the first page over its own (read before them)', () => {
    let s = latest();
    s = fold(s, evAction(s, ev(SID, 101, 'session.rewound', { rewindId: 'r1', toPromptId: 't1', rewound: ['t2', 't3', 't4', 't5', 't6'], files: [], turns: 6, at: at(50) })));
    expect(s.turns.t4!.rewound).toBe(true);
    s = older(s, 'tok-3', page(1, 3));
    expect(s.turnOrder.map((id) => s.turns[id]!.rewound)).toEqual([false, true, true, true, true, true]);
  });

  it('numbers turns by seq where only the latest are loaded (the Changes view, the undo of a rewind)', () => {
    let s = loaded(SID, { seq: 100, transcript: page(51, 60, 'tok-50') });
    expect(turnRanges(s).map((r) => r.index)).toEqual([51, 52, 53, 54, 55, 56, 57, 58, 59, 60]);
    expect(turnCount(s)).toBe(60);
    s = older(s, 'tok-50', page(41, 50, 'tok-40'));
    expect(turnRanges(s)[0]).toMatchObject({ promptId: 't41', index: 41, toTurn: 't42' });
    expect(turnRanges(s)[9]).toMatchObject({ promptId: 't50', index: 50, toTurn: 't51' });
    expect(turnCount(s)).toBe(60);
  });
});

describe('the controller', () => {
  /** A daemon of turns 1..n, answering pages as tetherd does (token: the seq of the oldest turn of the page after). */
  function pagedApi(n: number) {
    const api = new FakeApi(SID, { seq: 100 });
    api.transcriptImpl = (o) => {
      const before = o?.pageToken ? Number(o.pageToken.slice(4)) : n + 1;
      const limit = o?.limit ?? n;
      const from = Math.max(1, before - limit);
      return Promise.resolve(page(from, before - 1, from > 1 ? `tok-${from}` : undefined));
    };
    return api;
  }

  it(`asks for the latest ${TRANSCRIPT_PAGE_TURNS} turns, streams from that page, and reads older pages on demand`, async () => {
    const api = pagedApi(120);
    const c = new SessionController(api);
    c.start();
    await flush();
    expect(api.calls.find((x) => x.name === 'transcript')?.args).toEqual([{ limit: TRANSCRIPT_PAGE_TURNS }]);
    expect(api.calls.find((x) => x.name === 'events')?.args).toEqual(['ep1:100']);
    expect(c.state.turnOrder).toHaveLength(50);
    expect(c.state.turnOrder[0]).toBe('t71');
    // Asked twice while the first read runs: one read.
    void c.loadOlder();
    void c.loadOlder();
    await flush();
    expect(api.calls.filter((x) => x.name === 'transcript').map((x) => x.args[0])).toEqual([{ limit: 50 }, { limit: 50, pageToken: 'tok-71' }]);
    expect(c.state.turnOrder[0]).toBe('t21');
    await c.loadOlder();
    expect(c.state.turnOrder).toHaveLength(120);
    expect(c.state.history.next).toBeUndefined();
    // Nothing older: no read.
    await c.loadOlder();
    expect(api.count('transcript')).toBe(3);
    c.dispose();
  });

  it('a failed page is said, and read again when asked; a reload meanwhile drops the page', async () => {
    const api = pagedApi(120);
    const c = new SessionController(api, { pageTurns: 100 });
    c.start();
    await flush();
    expect(c.state.turnOrder[0]).toBe('t21');
    const answer = api.transcriptImpl;
    api.transcriptImpl = () => Promise.reject(new Error('HTTP 503'));
    await c.loadOlder();
    expect(c.state.history).toMatchObject({ loading: false, error: 'HTTP 503', next: 'tok-21' });
    const slow = deferred<Transcript>();
    api.transcriptImpl = () => slow.promise;
    void c.loadOlder();
    await flush();
    expect(c.state.history).toMatchObject({ loading: true, error: undefined });
    api.transcriptImpl = answer;
    c.reload();
    await flush();
    slow.resolve(page(1, 20));
    await flush();
    expect(c.state.turnOrder[0]).toBe('t21');
    expect(c.state.history).toMatchObject({ loading: false, next: 'tok-21', pages: 0 });
    await c.loadOlder();
    expect(c.state.turnOrder).toHaveLength(120);
    c.dispose();
  });
});
