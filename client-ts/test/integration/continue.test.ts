// Continuation against the real tetherd: after kill -9 and restart, and
// under concurrency (at most one continuation is admitted).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StreamEvent, type TetherClient } from '../../src/index.js';
import { Daemon, until } from '../helpers/daemon.js';
import { clientFor, durableIds, expectContiguous, fullLog, isTerminalFor, readUntil } from '../helpers/util.js';

let d: Daemon;
let c: TetherClient;

beforeAll(async () => {
  d = await Daemon.start();
  c = clientFor(d);
});
afterAll(async () => {
  await d?.dispose();
});

describe('continue()', () => {
  it('continues an interrupted turn after kill -9 and restart; the stream spans the crash', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    const stream = s.events();
    let crashed = false;
    let accepted: Awaited<ReturnType<typeof s.continue>> | undefined;
    const evs = await readUntil(stream, isTerminalFor('cont-1'), {
      timeoutMs: 45_000,
      onEvent: async (e) => {
        if (e.type === 'replay_complete' && !crashed) await s.prompt('/sleep 30000', { promptId: 'long' });
        if (!crashed && e.type === 'message.added' && e.data.role === 'agent' && e.data.promptId === 'long') {
          crashed = true;
          await d.restart({ crash: true }); // kill -9 during the turn, after its first chunk

          const ctx = await s.context();
          expect(ctx.recovery.kind).toBe('interrupted_turn');
          expect(ctx.recovery.canContinue).toBe(true);
          expect(ctx.recovery.promptId).toBe('long');
          const interrupted = await s.waitForTurn('long');
          expect(interrupted.type).toBe('turn.interrupted');
          if (interrupted.type === 'turn.interrupted') expect(interrupted.data.reason).toBe('daemon_restart');

          accepted = await s.continue({ promptId: 'cont-1' });
          expect(accepted.kind).toBe('accepted');
          if (accepted.kind !== 'accepted') throw new Error(JSON.stringify(accepted));
          expect(accepted.promptId).toBe('cont-1');
          expect(accepted.interruption.kind).toBe('interrupted_turn');
          expect(accepted.interruption.promptId).toBe('long');
          expect(accepted.eventEpoch).toBe(ctx.eventEpoch);
          expect(accepted.cursor).toMatch(/^[0-9a-f]+:\d+$/);
        }
      },
    });
    if (accepted?.kind !== 'accepted') throw new Error('not accepted');
    const done = evs.at(-1)!;
    expect(done.type).toBe('turn.completed');
    // waitForTurn from the accepted cursor sees the same terminal event.
    const viaWait = await s.waitForTurn('cont-1', { cursor: accepted.cursor! });
    expect(viaWait.id).toBe((done as { id?: string }).id);
    // The stream saw everything once, across the crash.
    const ids = durableIds(evs);
    expectContiguous(ids);
    expect(ids).toEqual((await fullLog(c, s.id)).slice(0, ids.length));
    const started = evs.find((e): e is Extract<StreamEvent, { type: 'turn.started' }> => e.type === 'turn.started' && e.data.promptId === 'cont-1');
    expect(started?.data.kind).toBe('continue');
    // Continuing added no user message.
    const t = await s.transcript();
    expect(t.messages.filter((m) => m.role === 'user' && m.promptId === 'cont-1')).toEqual([]);
    expect(t.turns.find((x) => x.promptId === 'cont-1')?.continuesPromptId).toBe('long');

    // Retrying with the same promptId is safe: the same turn.
    const retry = await s.continue({ promptId: 'cont-1' });
    expect(retry).toMatchObject({ kind: 'accepted', promptId: 'cont-1' });
    // Nothing left to continue now.
    const again = await s.continue();
    expect(again.kind).toBe('declined');
    if (again.kind === 'declined') {
      expect(again.reason).toBe('nothing_to_continue');
      expect(again.recovery?.kind).toBe('clean');
      expect(again.problem.code).toBe('nothing_to_continue');
    }
  });

  it('status() and resume() after kill -9: the agent is restored idle; listSessions and history()', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    await s.prompt('/echo before the crash', { promptId: 'pre' });
    await s.waitForTurn('pre');
    expect((await s.status()).isAgentRunning).toBe(true);
    await d.restart({ crash: true });
    const st = await s.status();
    expect(st.isAgentRunning).toBe(false);
    expect(st.isResumable).toBe(true);
    const resumed = await s.resume();
    expect(resumed.isAgentRunning).toBe(true);
    expect(resumed.executorStatus).toBe('ready');
    const list = await c.listSessions({ limit: 200 });
    expect(list.sessions.map((x) => x.id)).toContain(s.id);
    const history = await s.history();
    expect(history.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type?: string }).length).toBeGreaterThan(0);
    expect(history).toContain('before the crash');
  });

  it('two concurrent continue() calls: exactly one accepted, one declined', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    await s.prompt('/crash', { promptId: 'crashing' });
    const end = await s.waitForTurn('crashing');
    expect(end.type).toBe('turn.interrupted');
    await until('the recovery plan to allow continue', async () => (await s.context()).recovery.canContinue);

    const [a, b] = await Promise.all([s.continue({ promptId: 'race-a' }), s.continue({ promptId: 'race-b' })]);
    const kinds = [a.kind, b.kind].sort();
    expect(kinds, JSON.stringify([a, b])).toEqual(['accepted', 'declined']);
    const winner = a.kind === 'accepted' ? a : b.kind === 'accepted' ? b : undefined;
    const loser = a.kind === 'declined' ? a : b.kind === 'declined' ? b : undefined;
    if (!winner || winner.kind !== 'accepted' || !loser || loser.kind !== 'declined') throw new Error('unreachable');
    expect(winner.interruption.promptId).toBe('crashing');
    expect(loser.problem.status).toBe(409);
    expect(typeof loser.reason).toBe('string');
    expect((await s.waitForTurn(winner.promptId, winner.cursor ? { cursor: winner.cursor } : {})).type).toBe('turn.completed');
    // Only the winner's turn exists.
    const turns = (await s.transcript()).turns.map((t) => t.promptId);
    expect(turns).toContain(winner.promptId);
    expect(turns).not.toContain(winner.promptId === 'race-a' ? 'race-b' : 'race-a');
  });

  it('an unreachable daemon gives kind "unknown" (never retried), retrySafe only with a promptId', async () => {
    const s = clientFor({ baseUrl: 'http://127.0.0.1:9', token: 'x' }).session('any');
    const a = await s.continue();
    expect(a).toMatchObject({ kind: 'unknown', retrySafe: false });
    const b = await s.continue({ promptId: 'k1' });
    expect(b).toMatchObject({ kind: 'unknown', retrySafe: true });
  });
});
