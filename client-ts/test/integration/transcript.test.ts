// Transcript pages against the real tetherd (issue 36): the latest page
// first, older ones through transcriptPages(), and together they are the
// whole transcript; a bad page token is a typed problem.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TetherProblem, type TetherClient, type Transcript } from '../../src/index.js';
import { Daemon } from '../helpers/daemon.js';
import { clientFor } from '../helpers/util.js';

let d: Daemon;
let c: TetherClient;

beforeAll(async () => {
  d = await Daemon.start();
  c = clientFor(d);
});
afterAll(async () => {
  await d?.dispose();
});

describe('transcript pages', () => {
  it('pages back from the latest turn to the first, and hold the whole transcript', async () => {
    const created = await c.createSession({ agentProfileId: 'demo', cwd: d.cwd });
    const s = c.session(created.id);
    for (const [i, p] of ['/echo one', '/tool', '/echo three', '/thought', '/echo five'].entries()) {
      await s.prompt(p, { promptId: `t${i + 1}` });
      const end = await s.waitForTurn(`t${i + 1}`);
      expect(end.type).toBe('turn.completed');
    }

    const latest = await s.transcript({ limit: 2 });
    expect(latest.turns.map((t) => t.promptId)).toEqual(['t4', 't5']);
    expect(latest.turns.map((t) => t.seq)).toEqual([4, 5]);
    expect(latest.nextPageToken).toBeTypeOf('string');

    const pages: Transcript[] = [];
    for await (const page of s.transcriptPages(2)) pages.push(page);
    expect(pages.map((p) => p.turns.map((t) => t.promptId))).toEqual([['t4', 't5'], ['t2', 't3'], ['t1']]);
    expect(pages[2]?.nextPageToken).toBeUndefined();

    const whole = await s.transcript();
    expect(whole.nextPageToken).toBeUndefined();
    const oldestFirst = pages.reverse();
    expect(oldestFirst.flatMap((p) => p.turns)).toEqual(whole.turns);
    expect(oldestFirst.flatMap((p) => p.messages)).toEqual(whole.messages);
    expect(oldestFirst.flatMap((p) => p.toolCalls)).toEqual(whole.toolCalls);

    const bad = await s.transcript({ limit: 2, pageToken: 'nope' }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(TetherProblem);
    expect((bad as TetherProblem).status).toBe(400);
    expect((bad as TetherProblem).code).toBe('invalid_request');
  });
});
