// Against the real tetherd (demo agent, real HTTP, real SSE).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TetherClient,
  TetherProblem,
  earliestCursor,
  type StreamEvent,
  type StreamState,
  type TetherClient as TC,
} from '../../src/index.js';
import { Daemon, until } from '../helpers/daemon.js';
import { clientFor, durableIds, expectContiguous, fullLog, isTerminalFor, readUntil } from '../helpers/util.js';

let d: Daemon;
let c: TC;

beforeAll(async () => {
  d = await Daemon.start();
  c = clientFor(d);
});
afterAll(async () => {
  await d?.dispose();
});

describe('tetherd: sessions, prompts, streams', () => {
  it('health, agents, tasks', async () => {
    expect((await c.health()).status).toBe('ok');
    const agents = await c.listAgents();
    expect(agents.agents.find((a) => a.id === 'demo')?.available).toBe(true);
    const t = await c.createTask({ title: 'sdk task', workspace: d.cwd });
    expect((await c.getTask(t.id)).title).toBe('sdk task');
    expect((await c.updateTask(t.id, { title: 'renamed' })).title).toBe('renamed');
    expect((await c.listTasks()).tasks.some((x) => x.id === t.id)).toBe(true);
  });

  it('lists return the global cursor; the global stream from it has exactly the changes after the list', async () => {
    const tasks = await c.listTasks();
    const sessions = await c.listSessions({ limit: 200 });
    const from = earliestCursor(tasks.cursor, sessions.cursor);
    expect(from).toBe(tasks.cursor);
    const t = await c.createTask({ title: 'after the list' });
    await c.updateTask(t.id, { state: 'COMPLETED' });
    const seen: StreamEvent[] = [];
    for await (const e of c.globalEvents({ cursor: from!, follow: false })) if (e.type !== 'replay_complete') seen.push(e);
    expect(seen.map((e) => e.type)).toEqual(['task.created', 'task.state_changed']);
    expect(seen.every((e) => (e.data as { taskId?: string }).taskId === t.id)).toBe(true);
    expect((await c.listTasks()).cursor).toBe(seen.at(-1)!.id);
  });

  it('create session, prompt, stream until the turn’s terminal event', async () => {
    const s = await c.createSession({ agentProfileId: 'demo', cwd: d.cwd, title: 'basic' });
    expect(s.state).toBeDefined();
    const session = c.session(s.id);
    const states: StreamState[] = [];
    const stream = session.events({ onStateChange: (st) => states.push(st) });
    let text = '';
    const evs = await readUntil(stream, isTerminalFor('p1'), {
      onEvent: async (e) => {
        if (e.type === 'replay_complete' && !text) await session.prompt('/stream 5', { promptId: 'p1' });
        if ((e.type === 'message.added' || e.type === 'message.chunk') && e.data.role === 'agent' && e.data.promptId === 'p1') {
          text += e.data.text;
        }
      },
    });
    const last = evs.at(-1)!;
    expect(last.type).toBe('turn.completed');
    if (last.type === 'turn.completed') expect(last.data.stopReason).toBe('end_turn');
    expect(text).toBe('chunk 1\nchunk 2\nchunk 3\nchunk 4\nchunk 5\n');
    expect(states.slice(0, 2)).toEqual(['catching_up', 'open']);
    expect(stream.state).toBe('closed');
    // Every durable event once, in order, and the same as the log.
    const ids = durableIds(evs);
    expectContiguous(ids);
    expect((await fullLog(c, s.id)).slice(0, ids.length)).toEqual(ids);
    expect(stream.cursor).toBe(ids.at(-1));
    const turn = await session.turn('p1');
    expect(turn.state).toBe('completed');
  });

  it('waitForTurn resolves for a turn that already ended (reads from the start of the log)', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    const acc = await s.prompt('/echo hi', { promptId: 'w1' });
    const first = await s.waitForTurn('w1');
    expect(first.type).toBe('turn.completed');
    expect(first.data.promptId).toBe('w1');
    // Again, after the fact, and from the accepted cursor.
    const again = await s.waitForTurn('w1', { cursor: acc.cursor });
    expect(again.id).toBe(first.id);
    const t = await s.transcript();
    expect(t.turns.map((x) => x.promptId)).toContain('w1');
    expect(t.messages.some((m) => m.role === 'agent' && m.text.includes('hi'))).toBe(true);
  });

  it('waitForTurn honours its abort signal', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    await expect(s.waitForTurn('never', { signal: ac.signal })).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('permission request → answerPermission → turn completes', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    await s.prompt('/permission', { promptId: 'perm' });
    const evs = await readUntil(s.events({ types: ['permission.requested'] }), (e) => e.type === 'permission.requested');
    const req = evs.at(-1)!;
    if (req.type !== 'permission.requested') throw new Error('unreachable');
    expect(req.data.options.map((o) => o.optionId)).toContain('allow_once');
    const resolved = await s.answerPermission(req.data.requestId, { optionId: 'allow_once' });
    expect(resolved.state).toBe('selected');
    const end = await s.waitForTurn('perm');
    expect(end.type).toBe('turn.completed');
  });

  it('cancel ends a hanging turn as turn.cancelled', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    await s.prompt('/hang', { promptId: 'h' });
    await readUntil(s.events(), (e) => e.type === 'message.added' && e.data.role === 'agent' && e.data.promptId === 'h');
    const r = await s.cancel();
    expect(r.cancelled).toBe(true);
    expect((await s.waitForTurn('h')).type).toBe('turn.cancelled');
  });

  it('global stream: session events across the daemon; follow=false ends; live from a cursor', async () => {
    const s = await c.createSession({ agentProfileId: 'demo', cwd: d.cwd });
    const replay: StreamEvent[] = [];
    const g = c.globalEvents({ follow: false });
    for await (const e of g) replay.push(e);
    expect(replay.some((e) => e.type === 'session.created' && e.data.sessionId === s.id)).toBe(true);
    expect(replay.at(-1)!.type).toBe('replay_complete');
    expect(g.cursor).toBeDefined();

    const live = c.globalEvents({ cursor: g.cursor!, types: ['session.closed'] });
    const evs = await readUntil(live, (e) => e.type === 'session.closed' && e.data.sessionId === s.id, {
      onEvent: async (e) => {
        if (e.type === 'replay_complete') await c.session(s.id).close();
      },
    });
    expect(evs.filter((e) => e.type !== 'replay_complete').every((e) => e.type === 'session.closed')).toBe(true);
  });

  it('a closed session: the stream ends after session.closed; at the head it is 204 (ends, no events)', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    await s.prompt('/echo bye', { promptId: 'b' });
    await s.waitForTurn('b');
    await s.close();
    // The daemon appends the agent's executor_status{stopped} after
    // session.closed; wait for it so the log is final.
    await until('the agent to stop', async () => (await s.get()).executor?.status === 'stopped');
    const all: StreamEvent[] = [];
    const st = s.events();
    for await (const e of st) all.push(e); // ends by itself: 204 once drained
    const durable = all.filter((e) => 'id' in e && e.id);
    expect(durable.map((e) => e.type)).toContain('session.closed');
    expectContiguous(durableIds(all));
    expect(st.state).toBe('closed');
    const after: StreamEvent[] = [];
    const st2 = s.events({ cursor: st.cursor! });
    for await (const e of st2) after.push(e);
    expect(after).toEqual([]);
    expect(st2.state).toBe('closed');
    expect((await s.get()).closedAt).toBeDefined();
  });
});

describe('tetherd: typed problem errors', () => {
  it('401 unauthorized: calls and streams', async () => {
    const bad = new TetherClient({ baseUrl: d.baseUrl, token: 'wrong' });
    const e = await bad.listSessions().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TetherProblem);
    expect((e as TetherProblem).status).toBe(401);
    expect((e as TetherProblem).code).toBe('unauthorized');
    const it = bad.globalEvents()[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
    // /health needs no token.
    expect((await bad.health()).status).toBe('ok');
  });

  it('404: unknown session (call, stream, continue), unknown turn', async () => {
    await expect(c.getSession('no-such-session')).rejects.toMatchObject({ status: 404, code: 'session_not_found' });
    const st = c.session('no-such-session').events();
    const err = await (async () => {
      for await (const _ of st) void _;
    })().catch((x: unknown) => x);
    expect(err).toBeInstanceOf(TetherProblem);
    expect((err as TetherProblem).code).toBe('session_not_found');
    expect(st.state).toBe('closed');
    await expect(c.session('no-such-session').continue()).rejects.toMatchObject({ status: 404 });
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    await expect(s.turn('nope')).rejects.toMatchObject({ status: 404, code: 'turn_not_found' });
  });

  it('409: prompt with multitask=reject while a turn runs; continue declined', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    await s.prompt('/hang', { promptId: 'busy' });
    await readUntil(s.events(), (e) => e.type === 'turn.started' && e.data.promptId === 'busy');
    const e = (await s.prompt('/echo no', { multitask: 'reject' }).catch((x: unknown) => x)) as TetherProblem;
    expect(e).toBeInstanceOf(TetherProblem);
    expect([e.status, e.code]).toEqual([409, 'turn_active']);
    const out = await s.continue();
    expect(out.kind).toBe('declined');
    if (out.kind === 'declined') {
      expect(out.problem.status).toBe(409);
      expect(out.reason).toBe('turn_active');
      expect(out.recovery?.canContinue).toBe(false);
    }
    await s.cancel();
    expect((await s.waitForTurn('busy')).type).toBe('turn.cancelled');
  });

  it('400: malformed cursor on a stream; invalid request body', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    const it = s.events({ cursor: 'not-a-cursor' })[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toMatchObject({ status: 400, code: 'invalid_cursor' });
    await expect(s.prompt([])).rejects.toMatchObject({ status: 400 });
  });
});
