// The session reducer: terminal events settle only their own turn, guards
// against other sessions and stale loads, cursor ordering of events and
// recovery reads, streaming text, and continuation bookkeeping.
import { describe, expect, it } from 'vitest';
import { bannerGate } from '../src/state/banner';
import { activeTurn, isTurnBusy } from '../src/state/selectors';
import { initialSessionState, sessionReducer, toolCallKey } from '../src/state/session-state';
import { clean, context, ev, evAction, fold, interruptedTurn, loaded, transcript } from './fixtures';

const SID = 's1';

describe('terminal events and promptId matching', () => {
  it('a terminal event settles only the turn whose promptId it carries', () => {
    let s = loaded(SID);
    s = fold(
      s,
      evAction(s, ev(SID, 11, 'turn.started', { promptId: 'A', kind: 'prompt' })),
      evAction(s, ev(SID, 12, 'turn.queued', { promptId: 'B', kind: 'prompt' })),
      evAction(s, ev(SID, 13, 'turn.completed', { promptId: 'B', state: 'completed' })),
    );
    expect(s.turns.A!.state).toBe('running');
    expect(s.turns.B!.state).toBe('completed');
    expect(activeTurn(s)?.promptId).toBe('A');
  });

  it('a terminal event without a promptId settles nothing', () => {
    let s = loaded(SID);
    s = fold(s, evAction(s, ev(SID, 11, 'turn.started', { promptId: 'A', kind: 'prompt' })), evAction(s, ev(SID, 12, 'turn.cancelled', { state: 'cancelled' })));
    expect(s.turns.A!.state).toBe('running');
    expect(isTurnBusy(s)).toBe(true);
  });

  it("an older turn's terminal event does not settle the continuation", () => {
    let s = loaded(SID, { recovery: interruptedTurn('p1') });
    s = fold(s, { type: 'continue/click', sessionId: SID, key: 'c1' });
    s = fold(s, { type: 'continue/outcome', sessionId: SID, key: 'c1', outcome: { kind: 'accepted', promptId: 'c1', interruption: interruptedTurn('p1') } });
    s = fold(s, evAction(s, ev(SID, 11, 'turn.interrupted', { promptId: 'p1', state: 'interrupted', reason: 'daemon_restart', danglingToolCalls: [] })));
    expect(s.continuation).toMatchObject({ status: 'accepted', promptId: 'c1' });
    s = fold(s, evAction(s, ev(SID, 12, 'turn.started', { promptId: 'c1', kind: 'continue' })), evAction(s, ev(SID, 13, 'turn.completed', { promptId: 'c1', state: 'completed' })));
    expect(s.continuation.status).toBe('idle');
  });

  it('a continuation whose terminal event arrives before the response is settled by the response', () => {
    let s = loaded(SID, { recovery: interruptedTurn('p1') });
    s = fold(s, { type: 'continue/click', sessionId: SID, key: 'c1' });
    s = fold(
      s,
      evAction(s, ev(SID, 11, 'turn.queued', { promptId: 'c1', kind: 'continue', continuesPromptId: 'p1' })),
      evAction(s, ev(SID, 12, 'turn.started', { promptId: 'c1', kind: 'continue' })),
      evAction(s, ev(SID, 13, 'turn.completed', { promptId: 'c1', state: 'completed' })),
    );
    expect(s.continuation.status).toBe('idle');
    s = fold(s, { type: 'continue/outcome', sessionId: SID, key: 'c1', outcome: { kind: 'accepted', promptId: 'c1', interruption: interruptedTurn('p1') } });
    // The late response does not resurrect the finished continuation.
    expect(s.continuation.status).toBe('idle');
    expect(isTurnBusy(s)).toBe(false);
  });

  it('a continuation terminal does not finish a newer streaming turn', () => {
    let s = loaded(SID, { recovery: interruptedTurn('p1') });
    s = fold(s, { type: 'continue/click', sessionId: SID, key: 'c1' });
    s = fold(
      s,
      evAction(s, ev(SID, 11, 'turn.started', { promptId: 'c1', kind: 'continue' })),
      evAction(s, ev(SID, 12, 'turn.queued', { promptId: 'p3', kind: 'prompt' })),
      evAction(s, ev(SID, 13, 'turn.completed', { promptId: 'c1', state: 'completed' })),
      evAction(s, ev(SID, 14, 'turn.started', { promptId: 'p3', kind: 'prompt' })),
    );
    expect(s.turns.p3!.state).toBe('running');
    expect(isTurnBusy(s)).toBe(true);
  });

  it('the terminal event of a prompt removes its pending bubble and keeps the turn outcome', () => {
    let s = loaded(SID);
    s = fold(s, { type: 'prompt/sending', sessionId: SID, promptId: 'p5', text: 'hello' });
    expect(s.timeline.at(-1)).toEqual({ type: 'pending-prompt', id: 'p5' });
    s = fold(s, evAction(s, ev(SID, 11, 'turn.queued', { promptId: 'p5', kind: 'prompt' })), evAction(s, ev(SID, 12, 'turn.cancelled', { promptId: 'p5', state: 'cancelled' })));
    expect(s.pending.p5).toBeUndefined();
    expect(s.timeline.some((x) => x.type === 'pending-prompt')).toBe(false);
    expect(s.timeline.at(-1)).toEqual({ type: 'turn-end', id: 'p5' });
  });
});

describe('wrong-session guards', () => {
  it('an action for another session leaves the state untouched', () => {
    const s = loaded(SID, { recovery: interruptedTurn('p1') });
    const actions = [
      { type: 'event', sessionId: 'other', gen: 1, event: ev('other', 11, 'message.added', { messageId: 1, role: 'agent', text: 'x' }) },
      { type: 'context', sessionId: 'other', context: context('other', 20, clean()), read: 50 },
      { type: 'continue/click', sessionId: 'other', key: 'k' },
      { type: 'continue/outcome', sessionId: 'other', key: 'k', outcome: { kind: 'accepted', promptId: 'k', interruption: interruptedTurn() } },
      { type: 'prompt/sending', sessionId: 'other', promptId: 'x', text: 'x' },
      { type: 'load/snapshot', sessionId: 'other', gen: 1, transcript: transcript('other', 30) },
      { type: 'connection', sessionId: 'other', gen: 1, state: 'closed' },
    ] as const;
    for (const a of actions) expect(sessionReducer(s, a as never)).toBe(s);
  });

  it("an event whose payload names another session is ignored even on this session's stream", () => {
    const s = loaded(SID);
    const n = fold(s, evAction(s, ev('other', 11, 'message.added', { messageId: 1, role: 'agent', text: 'not mine' })));
    expect(n.messages[1]).toBeUndefined();
    expect(n.timeline).toHaveLength(0);
  });

  it('results of a superseded load are ignored', () => {
    let s = initialSessionState(SID);
    s = fold(s, { type: 'load/start', sessionId: SID, gen: 1 }, { type: 'load/start', sessionId: SID, gen: 2 });
    const stale = fold(s, { type: 'load/snapshot', sessionId: SID, gen: 1, transcript: transcript(SID, 5) });
    expect(stale).toBe(s);
    const staleEvent = fold(loaded(SID), { type: 'event', sessionId: SID, gen: 0, event: ev(SID, 11, 'message.added', { messageId: 9, role: 'agent', text: 'x' }) });
    expect(staleEvent.messages[9]).toBeUndefined();
  });

  it('a recovery of another session never shows in this pane', () => {
    const s = loaded(SID, { recovery: interruptedTurn('p1') });
    expect(bannerGate(s, 'other').visible).toBe(false);
  });
});

describe('cursor ordering', () => {
  it('events at or before the snapshot cursor are not applied twice', () => {
    let s = loaded(SID, { seq: 10, transcript: { messages: [{ id: 1, role: 'agent', text: 'Hello', createdAt: '2026-01-01T00:00:00Z' }] } });
    s = fold(s, evAction(s, ev(SID, 10, 'message.chunk', { messageId: 1, role: 'agent', text: ' again' })));
    expect(s.messages[1]!.text).toBe('Hello');
    s = fold(s, evAction(s, ev(SID, 11, 'message.chunk', { messageId: 1, role: 'agent', text: ' world' })));
    s = fold(s, evAction(s, ev(SID, 11, 'message.chunk', { messageId: 1, role: 'agent', text: ' world' })));
    expect(s.messages[1]!.text).toBe('Hello world');
  });

  it('events of another epoch are not applied', () => {
    const s = loaded(SID);
    const n = fold(s, evAction(s, { type: 'message.added', id: 'other-epoch:11', data: { sessionId: SID, messageId: 3, role: 'agent', text: 'x' } } as never));
    expect(n).toBe(s);
  });

  it('an older recovery read never overwrites a newer recovery event', () => {
    let s = loaded(SID, { recovery: interruptedTurn('p1'), seq: 10 });
    s = fold(s, evAction(s, ev(SID, 15, 'session.recovery_changed', { recovery: clean() })));
    s = fold(s, { type: 'context', sessionId: SID, context: context(SID, 12, interruptedTurn('p1')), read: 99 });
    expect(s.recovery!.summary.kind).toBe('clean');
  });

  it('a recovery read issued before local activity is discarded', () => {
    let s = loaded(SID, { recovery: clean() });
    s = fold(s, { type: 'recovery/read-floor', sessionId: SID, floor: 5 });
    s = fold(s, { type: 'context', sessionId: SID, context: context(SID, 20, interruptedTurn('p1')), read: 4 });
    expect(s.recovery!.summary.kind).toBe('clean');
    s = fold(s, { type: 'context', sessionId: SID, context: context(SID, 20, interruptedTurn('p1')), read: 6 });
    expect(s.recovery!.summary.kind).toBe('interrupted_turn');
  });
});

describe('transcript folding', () => {
  it('streams agent text into one message and keeps the timeline order', () => {
    let s = loaded(SID);
    s = fold(
      s,
      evAction(s, ev(SID, 11, 'message.added', { promptId: 'p', messageId: 1, role: 'user', text: 'hi' })),
      evAction(s, ev(SID, 12, 'tool_call.started', { promptId: 'p', toolCallId: 't1', title: 'Read', kind: 'read', status: 'in_progress', interrupted: false })),
      evAction(s, ev(SID, 13, 'tool_call.updated', { promptId: 'p', toolCallId: 't1', title: 'Read', status: 'completed', interrupted: false, content: [{ type: 'content', content: { type: 'text', text: 'x' } }] })),
      evAction(s, ev(SID, 14, 'message.added', { promptId: 'p', messageId: 2, role: 'agent', text: 'You said' })),
      evAction(s, ev(SID, 15, 'message.chunk', { promptId: 'p', messageId: 2, role: 'agent', text: ': hi.' })),
      evAction(s, ev(SID, 16, 'plan.updated', { entries: [{ content: 'a', status: 'completed' }] })),
    );
    expect(s.timeline).toEqual([
      { type: 'message', id: 1 },
      { type: 'tool', id: toolCallKey('p', 't1') },
      { type: 'message', id: 2 },
    ]);
    expect(s.messages[2]!.text).toBe('You said: hi.');
    expect(s.toolCalls[toolCallKey('p', 't1')]!.status).toBe('completed');
    expect(s.toolCalls[toolCallKey('p', 't1')]!.kind).toBe('read');
    expect(s.plan).toHaveLength(1);
  });

  it('text, a tool call, then text reads as two agent messages, live and after a reload alike', () => {
    // tetherd starts a new message when the agent's ACP messageId changes or
    // a tool call comes between chunks; the shell keeps them apart by id.
    let live = loaded(SID);
    live = fold(
      live,
      evAction(live, ev(SID, 11, 'message.added', { promptId: 'p', messageId: 1, role: 'user', text: 'go' })),
      evAction(live, ev(SID, 12, 'message.added', { promptId: 'p', messageId: 2, role: 'agent', text: 'Let me ' })),
      evAction(live, ev(SID, 13, 'message.chunk', { promptId: 'p', messageId: 2, role: 'agent', text: 'look.' })),
      evAction(live, ev(SID, 14, 'tool_call.started', { promptId: 'p', toolCallId: 't1', title: 'Look', status: 'in_progress', interrupted: false })),
      evAction(live, ev(SID, 15, 'message.added', { promptId: 'p', messageId: 3, role: 'agent', text: 'FINAL: ' })),
      evAction(live, ev(SID, 16, 'message.chunk', { promptId: 'p', messageId: 3, role: 'agent', text: 'done.' })),
    );
    const reloaded = loaded(SID, {
      seq: 16,
      transcript: {
        messages: [
          { id: 1, promptId: 'p', role: 'user', text: 'go', createdAt: '2026-01-01T00:00:01Z' },
          { id: 2, promptId: 'p', role: 'agent', text: 'Let me look.', createdAt: '2026-01-01T00:00:02Z' },
          { id: 3, promptId: 'p', role: 'agent', text: 'FINAL: done.', createdAt: '2026-01-01T00:00:04Z' },
        ],
        toolCalls: [{ id: 't1', promptId: 'p', title: 'Look', status: 'completed', interrupted: false, createdAt: '2026-01-01T00:00:03Z' }],
      },
    });
    const want = [
      { type: 'message', id: 1 },
      { type: 'message', id: 2 },
      { type: 'tool', id: toolCallKey('p', 't1') },
      { type: 'message', id: 3 },
    ];
    for (const s of [live, reloaded]) {
      expect(s.timeline).toEqual(want);
      expect(s.messages[2]!.text).toBe('Let me look.');
      expect(s.messages[3]!.text).toBe('FINAL: done.');
    }
  });

  it("two turns' tool calls with the same id are two calls, live and after a reload alike", () => {
    // A session restored on a fresh ACP session (history injection, a new
    // agent process): the agent numbers its tool calls from tool-1 again.
    const content = (text: string) => [{ type: 'content', content: { type: 'text', text } }];
    let live = loaded(SID);
    live = fold(
      live,
      evAction(live, ev(SID, 11, 'tool_call.started', { promptId: 'p1', toolCallId: 'tool-1', title: 'Run failing tool', kind: 'execute', status: 'in_progress', interrupted: false })),
      evAction(live, ev(SID, 12, 'tool_call.updated', { promptId: 'p1', toolCallId: 'tool-1', title: 'Run failing tool', kind: 'execute', status: 'failed', interrupted: false, content: content('simulated error') })),
      evAction(live, ev(SID, 13, 'message.added', { promptId: 'p2', messageId: 1, role: 'user', text: 'read it' })),
      evAction(live, ev(SID, 14, 'tool_call.started', { promptId: 'p2', toolCallId: 'tool-1', title: 'Read README.md', kind: 'read', status: 'in_progress', interrupted: false })),
      evAction(live, ev(SID, 15, 'tool_call.updated', { promptId: 'p2', toolCallId: 'tool-1', title: 'Read README.md', kind: 'read', status: 'completed', interrupted: false, content: content('# Fixture') })),
    );
    const reloaded = loaded(SID, {
      seq: 15,
      transcript: {
        messages: [{ id: 1, promptId: 'p2', role: 'user', text: 'read it', createdAt: '2026-01-01T00:00:02Z' }],
        toolCalls: [
          { id: 'tool-1', promptId: 'p1', title: 'Run failing tool', kind: 'execute', status: 'failed', interrupted: false, content: content('simulated error'), createdAt: '2026-01-01T00:00:01Z' },
          { id: 'tool-1', promptId: 'p2', title: 'Read README.md', kind: 'read', status: 'completed', interrupted: false, content: content('# Fixture'), createdAt: '2026-01-01T00:00:03Z' },
        ],
      },
    });
    for (const s of [live, reloaded]) {
      expect(s.timeline).toEqual([
        { type: 'tool', id: toolCallKey('p1', 'tool-1') },
        { type: 'message', id: 1 },
        { type: 'tool', id: toolCallKey('p2', 'tool-1') },
      ]);
      expect(s.toolCalls[toolCallKey('p1', 'tool-1')]).toMatchObject({ promptId: 'p1', title: 'Run failing tool', status: 'failed', content: content('simulated error') });
      expect(s.toolCalls[toolCallKey('p2', 'tool-1')]).toMatchObject({ promptId: 'p2', title: 'Read README.md', status: 'completed', content: content('# Fixture') });
    }
  });

  it("the user's message replaces the pending bubble in place", () => {
    let s = loaded(SID);
    s = fold(s, { type: 'prompt/sending', sessionId: SID, promptId: 'p7', text: 'hello' });
    s = fold(s, evAction(s, ev(SID, 11, 'message.added', { promptId: 'p7', messageId: 4, role: 'user', text: 'hello' })));
    expect(s.timeline).toEqual([{ type: 'message', id: 4 }]);
    expect(s.pending).toEqual({});
  });

  it('permission requests are pending until resolved', () => {
    let s = loaded(SID);
    s = fold(s, evAction(s, ev(SID, 11, 'permission.requested', { promptId: 'p', requestId: 'r1', title: 'Edit', options: [{ optionId: 'allow', name: 'Allow', kind: 'allow_once' }] })));
    expect(s.permissions.r1!.state).toBe('pending');
    s = fold(s, { type: 'permission/answering', sessionId: SID, requestId: 'r1' });
    expect(s.permissions.r1!.answering).toBe(true);
    s = fold(s, evAction(s, ev(SID, 12, 'permission.resolved', { promptId: 'p', requestId: 'r1', state: 'selected', optionId: 'allow' })));
    expect(s.permissions.r1).toMatchObject({ state: 'selected', selectedOptionId: 'allow', answering: false });
  });

  it('a continue turn gets a divider, never a user message', () => {
    let s = loaded(SID, { recovery: interruptedTurn('p1') });
    s = fold(s, evAction(s, ev(SID, 11, 'turn.queued', { promptId: 'c', kind: 'continue', continuesPromptId: 'p1', prompt: [{ type: 'text', text: 'Continue' }] })));
    expect(s.timeline).toEqual([{ type: 'turn-start', id: 'c' }]);
    expect(Object.values(s.messages).filter((m) => m.role === 'user')).toHaveLength(0);
  });

  it('the snapshot orders messages, tool calls and turn markers by time', () => {
    const s = loaded(SID, {
      transcript: {
        turns: [
          { promptId: 'p1', kind: 'prompt', state: 'interrupted', createdAt: '2026-01-01T00:00:01Z', endedAt: '2026-01-01T00:00:05Z' },
          { promptId: 'c1', kind: 'continue', state: 'completed', createdAt: '2026-01-01T00:00:06Z', startedAt: '2026-01-01T00:00:06Z' },
        ],
        messages: [
          { id: 1, promptId: 'p1', role: 'user', text: 'go', createdAt: '2026-01-01T00:00:01Z' },
          { id: 2, promptId: 'c1', role: 'agent', text: 'done', createdAt: '2026-01-01T00:00:07Z' },
        ],
        toolCalls: [{ id: 't', promptId: 'p1', title: 'x', status: 'failed', interrupted: true, createdAt: '2026-01-01T00:00:02Z' }],
      },
    });
    expect(s.timeline).toEqual([
      { type: 'message', id: 1 },
      { type: 'tool', id: toolCallKey('p1', 't') },
      { type: 'turn-end', id: 'p1' },
      { type: 'turn-start', id: 'c1' },
      { type: 'message', id: 2 },
      { type: 'turn-end', id: 'c1' },
    ]);
  });
});

describe('continuation bookkeeping', () => {
  it('a click is admitted once: a second click while sending is refused', () => {
    const s = loaded(SID, { recovery: interruptedTurn('p1') });
    const a = sessionReducer(s, { type: 'continue/click', sessionId: SID, key: 'k1' });
    expect(a.continuation).toMatchObject({ status: 'sending', key: 'k1', forPromptId: 'p1' });
    const b = sessionReducer(a, { type: 'continue/click', sessionId: SID, key: 'k2' });
    expect(b).toBe(a);
  });

  it('an admission seen in the stream before the response binds the continuation', () => {
    let s = loaded(SID, { recovery: interruptedTurn('p1') });
    s = fold(s, { type: 'continue/click', sessionId: SID, key: 'k1' });
    s = fold(s, evAction(s, ev(SID, 11, 'turn.queued', { promptId: 'k1', kind: 'continue', continuesPromptId: 'p1' })));
    expect(s.continuation).toMatchObject({ status: 'accepted', promptId: 'k1' });
  });

  it('an unknown outcome is reconciled by the stream when the turn shows up', () => {
    let s = loaded(SID, { recovery: interruptedTurn('p1') });
    s = fold(s, { type: 'continue/click', sessionId: SID, key: 'k1' }, { type: 'continue/outcome', sessionId: SID, key: 'k1', outcome: { kind: 'unknown', error: 'x', retrySafe: true } });
    expect(s.continuation.status).toBe('unknown');
    s = fold(s, evAction(s, ev(SID, 11, 'turn.queued', { promptId: 'k1', kind: 'continue' })));
    expect(s.continuation).toMatchObject({ status: 'accepted', promptId: 'k1' });
  });

  it('a new interruption gets a new idempotency key', () => {
    let s = loaded(SID, { recovery: interruptedTurn('p1') });
    s = fold(s, { type: 'continue/click', sessionId: SID, key: 'k1' }, { type: 'continue/outcome', sessionId: SID, key: 'k1', outcome: { kind: 'declined', reason: 'x' } });
    s = fold(s, evAction(s, ev(SID, 20, 'session.recovery_changed', { recovery: interruptedTurn('p9') })));
    s = fold(s, { type: 'continue/click', sessionId: SID, key: 'k2' });
    expect(s.continuation).toMatchObject({ status: 'sending', key: 'k2', forPromptId: 'p9' });
  });
});

describe('rewind and fork events', () => {
  it('session.rewound marks the turns it names, an undo unmarks them; the session keeps the last rewind', () => {
    let s = loaded(SID);
    s = fold(
      s,
      evAction(s, ev(SID, 11, 'turn.queued', { promptId: 'A', kind: 'prompt' })),
      evAction(s, ev(SID, 12, 'turn.completed', { promptId: 'A', state: 'completed' })),
      evAction(s, ev(SID, 13, 'turn.queued', { promptId: 'B', kind: 'prompt' })),
      evAction(s, ev(SID, 14, 'turn.completed', { promptId: 'B', state: 'completed' })),
      evAction(s, ev(SID, 15, 'session.rewound', { rewindId: 'r1', toPromptId: 'A', rewound: ['B'], files: [], turns: 2, at: '2026-12-07T00:00:00Z' })),
    );
    expect([s.turns.A!.rewound, s.turns.B!.rewound]).toEqual([undefined, true]);
    expect(s.session?.lastRewind).toMatchObject({ id: 'r1', toPromptId: 'A', rewound: ['B'], turns: 2 });
    s = fold(s, evAction(s, ev(SID, 16, 'session.rewound', { rewindId: 'r2', undoes: 'r1', rewound: [], restored: ['B'], files: [], turns: 2, at: '2026-12-07T00:00:01Z' })));
    expect(s.turns.B!.rewound).toBe(false);
    expect(s.session?.lastRewind).toMatchObject({ id: 'r2', undoes: 'r1' });
  });

  it('session.forked names the origin', () => {
    let s = loaded(SID);
    s = fold(s, evAction(s, ev(SID, 11, 'session.forked', { fromSessionId: 'o1', atPromptId: 'p2', turns: 2 })));
    expect(s.session?.forkedFrom).toMatchObject({ sessionId: 'o1', promptId: 'p2' });
  });

  it('history injection is no lost context: the next prompt carries it', () => {
    let s = loaded(SID);
    s = fold(s, evAction(s, ev(SID, 11, 'session.resumed', { strategy: 'history_injection', contextRestored: false })));
    expect(s.contextLost).toBe(false);
    s = fold(s, evAction(s, ev(SID, 12, 'session.resumed', { strategy: 'fresh', contextRestored: false })));
    expect(s.contextLost).toBe(true);
  });
});
