// Dropped connections, daemon restarts and epoch changes, against the
// real tetherd: every durable event arrives exactly once, in order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCursor, resyncFromSnapshot, type StreamEvent, type TetherClient } from '../../src/index.js';
import { Daemon } from '../helpers/daemon.js';
import {
  clientFor,
  CuttingProxy,
  durableIds,
  expectContiguous,
  fullLog,
  isTerminalFor,
  lastEventIdOf,
  readUntil,
  seqOf,
} from '../helpers/util.js';

let d: Daemon;
let c: TetherClient;

beforeAll(async () => {
  d = await Daemon.start();
  c = clientFor(d);
});
afterAll(async () => {
  await d?.dispose();
});

const isAgentText = (promptId: string) => (e: StreamEvent) =>
  (e.type === 'message.added' || e.type === 'message.chunk') && e.data.role === 'agent' && e.data.promptId === promptId;

describe('resumable streams against tetherd', () => {
  it('client abort mid-stream, then a new stream from the cursor: no gap, no duplicate', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    const ac = new AbortController();
    const first = s.events({ signal: ac.signal });
    const got: StreamEvent[] = [];
    let chunks = 0;
    for await (const e of first) {
      got.push(e);
      if (e.type === 'replay_complete') await s.prompt('/stream 60', { promptId: 'long' });
      if (isAgentText('long')(e) && ++chunks === 10) ac.abort(); // mid-turn
    }
    expect(first.state).toBe('closed');
    const cut = first.cursor!;
    expect(durableIds(got).at(-1)).toBe(cut);

    const second = s.events({ cursor: cut });
    const rest = await readUntil(second, isTerminalFor('long'));
    const all = [...durableIds(got), ...durableIds(rest)];
    expectContiguous(all);
    expect(all).toEqual((await fullLog(c, s.id)).slice(0, all.length));
    // The whole reply, exactly once.
    const text = [...got, ...rest].filter(isAgentText('long')).map((e) => (e as { data: { text: string } }).data.text).join('');
    expect(text).toBe(Array.from({ length: 60 }, (_, i) => `chunk ${i + 1}\n`).join(''));
  });

  it('server-side disconnects (connections cut under a live stream): one iterator resumes with Last-Event-ID', async () => {
    const proxy = await new CuttingProxy(d.port).listen();
    try {
      const pc = clientFor(d, proxy.url);
      const s = pc.session((await pc.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
      const stream = s.events();
      const cursorsAtCut: string[] = [];
      let turn = 0;
      let cutThisTurn = false;
      // Four turns; in each of the first three the connection is cut by the
      // server side at the turn's first agent output.
      const evs = await readUntil(stream, isTerminalFor('t4'), {
        onEvent: async (e) => {
          if (e.type === 'replay_complete' && turn === 0) {
            turn = 1;
            await c.session(s.id).prompt('/stream 20', { promptId: 't1' });
          }
          if (turn <= 3 && !cutThisTurn && isAgentText(`t${turn}`)(e)) {
            cutThisTurn = true;
            cursorsAtCut.push(stream.cursor!);
            proxy.cutAll();
          }
          if (turn < 4 && isTerminalFor(`t${turn}`)(e)) {
            turn++;
            cutThisTurn = false;
            await c.session(s.id).prompt('/stream 20', { promptId: `t${turn}` });
          }
        },
      });
      expect(cursorsAtCut).toHaveLength(3);
      const ids = durableIds(evs);
      expectContiguous(ids);
      expect(ids).toEqual((await fullLog(c, s.id)).slice(0, ids.length));
      // Each reconnect named, as Last-Event-ID, a cursor the iterator had
      // yielded, at or after the one it held when the cut happened.
      const resumedFrom = proxy.heads.map(lastEventIdOf).filter((x): x is string => !!x);
      expect(resumedFrom.length).toBeGreaterThanOrEqual(3);
      for (const cur of resumedFrom) expect(ids).toContain(cur);
      for (const cut of cursorsAtCut) expect(resumedFrom.some((r) => seqOf(r) >= seqOf(cut))).toBe(true);
      expect(proxy.heads.length).toBeGreaterThanOrEqual(4); // one connection + three reconnects
    } finally {
      await proxy.close();
    }
  });

  it.each([
    ['graceful stop', false],
    ['kill -9', true],
  ])('daemon restart (%s) mid-stream: the stream reconnects and resumes, events written while down included', async (_name, crash) => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    const states: string[] = [];
    const stream = s.events({ onStateChange: (st) => states.push(st) });
    let restarted = false;
    const evs = await readUntil(stream, isTerminalFor('after'), {
      timeoutMs: 45_000,
      onEvent: async (e) => {
        if (e.type === 'replay_complete' && !restarted) await s.prompt('/sleep 20000', { promptId: 'during' });
        if (isAgentText('during')(e) && !restarted) {
          restarted = true;
          await d.restart({ crash });
        }
        if (isTerminalFor('during')(e)) await s.prompt('/echo back', { promptId: 'after' });
      },
    });
    const ids = durableIds(evs);
    expectContiguous(ids);
    expect(ids).toEqual((await fullLog(c, s.id)).slice(0, ids.length));
    const during = evs.find(isTerminalFor('during'))!;
    if (crash) {
      // Written by start-up reconciliation, while the client was away.
      expect(during.type).toBe('turn.interrupted');
      if (during.type === 'turn.interrupted') expect(during.data.reason).toBe('daemon_restart');
    }
    expect(evs.at(-1)!.type).toBe('turn.completed');
    // Disconnected while the daemon was down, then caught up again.
    expect(states.filter((x) => x === 'catching_up').length).toBeGreaterThanOrEqual(2);
  });

  it('epoch change: resync_required → resyncFromSnapshot reloads the transcript and continues', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    await s.prompt('/echo one', { promptId: 'e1' });
    const done = await s.waitForTurn('e1');
    const real = parseCursor(done.id!)!;

    // A cursor from another history (wrong epoch).
    const stream = s.events({ cursor: `0bad0bad0bad0bad:${real.seq}` });
    let snapshotCursor = '';
    let transcriptTurns: string[] = [];
    const evs = await readUntil(stream, isTerminalFor('e2'), {
      onEvent: async (e) => {
        if (e.type === 'resync_required') {
          expect(e.data.reason).toBe('epoch_mismatch');
          expect(e.data.epoch).toBe(real.epoch);
          const t = await resyncFromSnapshot(s, stream);
          snapshotCursor = t.cursor;
          transcriptTurns = t.turns.map((x) => x.promptId);
          await s.prompt('/echo two', { promptId: 'e2' });
        }
      },
    });
    expect(evs[0]!.type).toBe('resync_required');
    expect(transcriptTurns).toContain('e1');
    const ids = durableIds(evs);
    // Nothing at or before the snapshot's cursor again; everything after it once.
    expectContiguous(ids, seqOf(snapshotCursor) + 1);
    expect(parseCursor(ids[0]!)!.epoch).toBe(real.epoch);
  });

  it('cursor ahead of the head also resyncs; waitForTurn copes via the transcript', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    await s.prompt('/echo x', { promptId: 'a1' });
    const real = await s.waitForTurn('a1');
    const epoch = parseCursor(real.id!)!.epoch;
    const it = s.events({ cursor: `${epoch}:999999` })[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.value).toMatchObject({ type: 'resync_required', data: { reason: 'cursor_ahead' } });
    await it.return!();
    // waitForTurn from a wrong-epoch cursor: the turn ended, so the snapshot answers (an event without id).
    const viaSnapshot = await s.waitForTurn('a1', { cursor: 'deadbeefdeadbeef:1' });
    expect(viaSnapshot.type).toBe('turn.completed');
    expect(viaSnapshot.data.promptId).toBe('a1');
    expect(viaSnapshot.id).toBeUndefined();
  });
});
