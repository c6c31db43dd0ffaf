// Budgets against the real tetherd (issue 33): a token budget stops a
// looping turn, the SDK sees budget_exceeded as the turn's error, as the
// inbox's item and as the refusal of a prompt; raised with
// updateSession(), the stopped turn is continued.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TetherProblem, type TetherClient } from '../../src/index.js';
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

describe('budgets', () => {
  it('a token budget stops a looping turn; raised, the turn is continued', async () => {
    const created = await c.createSession({ agentProfileId: 'demo', cwd: d.cwd, budget: { maxTokens: 1000 } });
    expect(created.budget).toEqual({ maxTokens: 1000 });
    const s = c.session(created.id);
    await s.prompt('/loop 0 10', { promptId: 'loop' });
    const end = await s.waitForTurn('loop');
    expect(end.type).toBe('turn.cancelled');
    if (end.type === 'turn.cancelled') expect(end.data.reason).toBe('budget_exceeded');
    const turn = await s.turn('loop');
    expect(turn.state).toBe('cancelled');
    expect(turn.error?.code).toBe('budget_exceeded');

    const inbox = await c.listInbox();
    const item = inbox.items.find((i) => i.session.id === created.id);
    expect(item?.kind).toBe('budget_exceeded');
    expect(item?.turn?.promptId).toBe('loop');

    const refused = await s.prompt('/echo more').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TetherProblem);
    expect((refused as TetherProblem).status).toBe(409);
    expect((refused as TetherProblem).code).toBe('budget_exceeded');
    const declined = await s.continue();
    expect(declined.kind).toBe('declined');
    if (declined.kind === 'declined') expect(declined.reason).toBe('budget_exceeded');

    const raised = await c.updateSession(created.id, { budget: { maxTokens: 100_000 } });
    expect(raised.budget).toEqual({ maxTokens: 100_000 });
    const accepted = await s.continue({ promptId: 'more' });
    expect(accepted.kind).toBe('accepted');
    const done = await s.waitForTurn('more');
    expect(done.type).toBe('turn.completed');
  });
});
