// Budgets and the stall watchdog in a pane's state: the session's budget
// from its load, session.budget_changed and the PATCH's answer; a stall
// set on its running turn by turn.stalled and gone with turn.stall_ended
// or the turn's end; a turn a budget stopped keeps it as its error; how
// much of a budget is used; the editor's form; the controller's PATCH.
import { describe, expect, it } from 'vitest';
import { budgetForm, budgetOfForm, costUse, stallSince, stoppedByBudget, tokenUse, usedTokens } from '../src/state/budget';
import { bannerGate } from '../src/state/banner';
import { SessionController } from '../src/state/session-controller';
import { initialTasksState, tasksReducer } from '../src/state/tasks-state';
import type { Usage } from '../src/state/types';
import { ev, evAction, FakeApi, flush, fold, interruptedTurn, loaded, session } from './fixtures';

const SID = 's1';
const at = '2026-01-01T00:00:00Z';

function running(over: Parameters<typeof loaded>[1] = {}) {
  const s = loaded(SID, over);
  return fold(s, evAction(s, ev(SID, 11, 'turn.started', { promptId: 'p1', kind: 'prompt' })));
}

describe('how much of a budget is used', () => {
  it('counts tokens as tetherd does: the total, else the sum of the members', () => {
    expect(usedTokens(undefined)).toBe(0);
    expect(usedTokens({ totalTokens: 1080, inputTokens: 900 })).toBe(1080);
    expect(usedTokens({ inputTokens: 900, outputTokens: 180, cachedReadTokens: 20, cachedWriteTokens: 1 })).toBe(1101);
  });

  it('says the ratio and the level of each limit the budget sets, and nothing for the others', () => {
    const u: Usage = { totalTokens: 850, cost: { amount: 0.5, currency: 'USD' } };
    expect(tokenUse({ maxTokens: 1000 }, u)).toEqual({ used: 850, max: 1000, ratio: 0.85, level: 'high' });
    expect(tokenUse({ maxTokens: 1000 }, { totalTokens: 1080 })?.level).toBe('full');
    expect(tokenUse({ maxTokens: 1000 }, undefined)).toMatchObject({ used: 0, level: 'ok' });
    expect(tokenUse({ stallSeconds: 5 }, u)).toBeUndefined();
    expect(costUse({ maxCost: { amount: 2, currency: 'USD' } }, u)).toEqual({ used: 0.5, max: 2, ratio: 0.25, level: 'ok', currency: 'USD' });
    // A cost in another currency is not counted.
    expect(costUse({ maxCost: { amount: 2, currency: 'EUR' } }, u)).toMatchObject({ used: 0, currency: 'EUR' });
    expect(costUse(undefined, u)).toBeUndefined();
  });

  it('knows since when a stalled turn is silent: the event says it, a snapshot only when it stalled', () => {
    expect(stallSince({ stalledAt: '2026-01-01T00:01:00Z', stalledSince: '2026-01-01T00:00:30Z' }, { stallSeconds: 60 })).toBe(Date.parse('2026-01-01T00:00:30Z'));
    expect(stallSince({ stalledAt: '2026-01-01T00:01:00Z' }, { stallSeconds: 60 })).toBe(Date.parse(at));
    expect(stallSince({}, { stallSeconds: 60 })).toBeUndefined();
  });
});

describe('the editor form', () => {
  it('shows a budget, the time per turn in minutes when it is whole minutes', () => {
    expect(budgetForm(undefined)).toEqual({ tokens: '', cost: '', turn: '', turnUnit: 'minutes', stall: '' });
    expect(budgetForm({ maxTokens: 1000, maxCost: { amount: 1.5, currency: 'USD' }, maxTurnSeconds: 600, stallSeconds: 30 })).toEqual({
      tokens: '1000',
      cost: '1.5',
      turn: '10',
      turnUnit: 'minutes',
      stall: '30',
    });
    expect(budgetForm({ maxTurnSeconds: 90 })).toMatchObject({ turn: '90', turnUnit: 'seconds' });
  });

  it('reads the budget whole: an empty field sets no limit; what is not a number is named', () => {
    expect(budgetOfForm({ tokens: ' 5000 ', cost: '2.5', turn: '1.5', turnUnit: 'minutes', stall: '20' })).toEqual({
      budget: { maxTokens: 5000, maxCost: { amount: 2.5, currency: 'USD' }, maxTurnSeconds: 90, stallSeconds: 20 },
    });
    expect(budgetOfForm({ tokens: '', cost: '', turn: '45', turnUnit: 'seconds', stall: '' }, 'EUR')).toEqual({ budget: { maxTurnSeconds: 45 } });
    expect(budgetOfForm({ tokens: '', cost: '3', turn: '', turnUnit: 'minutes', stall: '' }, 'EUR')).toEqual({ budget: { maxCost: { amount: 3, currency: 'EUR' } } });
    expect(budgetOfForm(budgetForm(undefined))).toEqual({ budget: {} });
    expect(budgetOfForm({ tokens: '', cost: 'lots', turn: '', turnUnit: 'minutes', stall: '' })).toEqual({ invalid: 'cost' });
    // What a number may be is the daemon's to say: a negative one goes as typed.
    expect(budgetOfForm({ tokens: '-5', cost: '', turn: '', turnUnit: 'minutes', stall: '' })).toEqual({ budget: { maxTokens: -5 } });
  });
});

describe('the reducer', () => {
  it("takes the session's budget from its load and session.budget_changed; an empty one is none", () => {
    let s = loaded(SID, { session: { budget: { maxTokens: 1000 } } });
    expect(s.budget).toEqual({ maxTokens: 1000 });
    s = fold(s, evAction(s, ev(SID, 11, 'session.budget_changed', { budget: { maxTokens: 5000, stallSeconds: 10 } })));
    expect(s.budget).toEqual({ maxTokens: 5000, stallSeconds: 10 });
    s = fold(s, evAction(s, ev(SID, 12, 'session.budget_changed', { budget: {} })));
    expect(s.budget).toBeUndefined();
    // Another session's change, or one seen again, changes nothing.
    const before = s;
    s = fold(s, evAction(s, ev('other', 13, 'session.budget_changed', { budget: { maxTokens: 1 } })));
    s = fold(s, evAction(s, ev(SID, 12, 'session.budget_changed', { budget: { maxTokens: 1 } })));
    expect(s).toBe(before);
  });

  it('a stall is set on its running turn, and goes with turn.stall_ended', () => {
    let s = running();
    s = fold(s, evAction(s, ev(SID, 12, 'turn.stalled', { promptId: 'p1', since: at, seconds: 5, stalledAt: '2026-01-01T00:00:05Z' })));
    expect(s.turns.p1).toMatchObject({ state: 'running', stalledAt: '2026-01-01T00:00:05Z', stalledSince: at });
    s = fold(s, evAction(s, ev(SID, 13, 'turn.stall_ended', { promptId: 'p1' })));
    expect(s.turns.p1!.stalledAt).toBeUndefined();
    expect(s.turns.p1!.stalledSince).toBeUndefined();
    // A stall of a turn this view does not hold, or of one that ended, shows nothing.
    s = fold(s, evAction(s, ev(SID, 14, 'turn.stalled', { promptId: 'ghost', since: at, seconds: 5, stalledAt: at })));
    expect(s.turns.ghost).toBeUndefined();
  });

  it("the turn's end ends its stall", () => {
    let s = running();
    s = fold(s, evAction(s, ev(SID, 12, 'turn.stalled', { promptId: 'p1', since: at, seconds: 1, stalledAt: at })));
    s = fold(s, evAction(s, ev(SID, 13, 'turn.cancelled', { promptId: 'p1', state: 'cancelled', cancelRequested: true })));
    expect(s.turns.p1).toMatchObject({ state: 'cancelled' });
    expect(s.turns.p1!.stalledAt).toBeUndefined();
    expect(stoppedByBudget(s.turns.p1)).toBe(false);
  });

  it('a turn a budget stopped keeps it as its error, live and from the transcript', () => {
    let s = running();
    s = fold(s, evAction(s, ev(SID, 12, 'budget.exceeded', { promptId: 'p1', limit: 'tokens', budget: { maxTokens: 1000 }, usage: { totalTokens: 1080 }, message: 'the session used 1080 tokens of its budget of 1000' })));
    expect(s.turns.p1!.state).toBe('running'); // its end says it
    s = fold(s, evAction(s, ev(SID, 13, 'turn.cancelled', { promptId: 'p1', state: 'cancelled', reason: 'budget_exceeded', message: 'the session used 1080 tokens of its budget of 1000' })));
    expect(s.turns.p1!.error).toEqual({ code: 'budget_exceeded', message: 'the session used 1080 tokens of its budget of 1000' });
    expect(stoppedByBudget(s.turns.p1)).toBe(true);
    const r = loaded(SID, {
      transcript: {
        turns: [
          { promptId: 'p1', kind: 'prompt', state: 'cancelled', createdAt: at, error: { code: 'budget_exceeded', message: 'm' } },
          { promptId: 'p2', kind: 'prompt', state: 'running', createdAt: at, stalledAt: at },
        ],
      },
    });
    expect(stoppedByBudget(r.turns.p1)).toBe(true);
    expect(r.turns.p2!.stalledAt).toBe(at);
  });

  it('opens and closes the budget editor of its own session only', () => {
    let s = loaded(SID);
    expect(s.budgetEditor).toBe(false);
    s = fold(s, { type: 'budget/editor', sessionId: 'other', open: true });
    expect(s.budgetEditor).toBe(false);
    s = fold(s, { type: 'budget/editor', sessionId: SID, open: true });
    expect(s.budgetEditor).toBe(true);
    // A reload keeps it open.
    s = fold(s, { type: 'load/start', sessionId: SID, gen: 2 });
    expect(s.budgetEditor).toBe(true);
  });
});

describe('the recovery banner', () => {
  const stopped = { ...interruptedTurn('p1'), interruptReason: 'budget_exceeded', danglingToolCalls: [] };

  it('offers no Continue while the usage is over the token or cost budget, whatever the plan says', () => {
    let s = loaded(SID, { recovery: stopped, session: { budget: { maxTokens: 1000 }, usage: { totalTokens: 1080 } } });
    expect(bannerGate(s, SID)).toMatchObject({ visible: true, showContinue: false, cannotReason: 'budget_exceeded', interruptReason: 'budget_exceeded' });
    // Raised: the plan's word holds.
    s = fold(s, evAction(s, ev(SID, 11, 'session.budget_changed', { budget: { maxTokens: 100000 } })));
    expect(bannerGate(s, SID)).toMatchObject({ showContinue: true });
    s = loaded(SID, { recovery: stopped, session: { budget: { maxCost: { amount: 0.05, currency: 'USD' } }, usage: { cost: { amount: 0.05, currency: 'USD' } } } });
    expect(bannerGate(s, SID).cannotReason).toBe('budget_exceeded');
  });
});

describe('the session list', () => {
  it('knows a turn a budget stopped from an interrupted one', () => {
    let s = tasksReducer(initialTasksState(), { type: 'lists', tasks: [], sessions: [session(SID)], cursor: 'ep1:1' });
    const recovery = { ...interruptedTurn('p1'), interruptReason: 'budget_exceeded' };
    s = tasksReducer(s, { type: 'event', event: ev(SID, 2, 'session.recovery_changed', { recovery }) });
    expect(s.sessions.get(SID)).toMatchObject({ recoveryKind: 'interrupted_turn', recoveryReason: 'budget_exceeded' });
  });
});

describe('the controller', () => {
  async function started() {
    const api = new FakeApi(SID);
    api.sessionImpl = () => Promise.resolve(session(SID, { budget: { maxTokens: 1000 } }));
    const c = new SessionController(api);
    c.start();
    await flush();
    api.stream.setState('open');
    await flush();
    return { api, c };
  }

  it('PATCHes the budget whole, takes the answer, and reads the recovery plan again', async () => {
    const { api, c } = await started();
    expect(c.state.budget).toEqual({ maxTokens: 1000 });
    const contexts = api.count('context');
    expect(await c.setBudget({ maxTokens: 5000, stallSeconds: 10 })).toBeUndefined();
    expect(api.calls.filter((x) => x.name === 'update').map((x) => x.args[0])).toEqual([{ budget: { maxTokens: 5000, stallSeconds: 10 } }]);
    expect(c.state.budget).toEqual({ maxTokens: 5000, stallSeconds: 10 });
    await flush();
    expect(api.count('context')).toBe(contexts + 1);
    c.dispose();
  });

  it("says the daemon's detail of a 400 (its first line), and keeps the budget", async () => {
    const { api, c } = await started();
    const problem = (detail: string) => Promise.reject(Object.assign(new Error('400'), { status: 400, code: 'invalid_request', detail }));
    api.updateImpl = () => problem("a budget's maxCost needs an amount above 0 and a three-letter currency");
    expect(await c.setBudget({ maxCost: { amount: 0, currency: 'USD' } })).toBe("a budget's maxCost needs an amount above 0 and a three-letter currency");
    // The schema's complaint goes on with the schema: its first line says it.
    api.updateImpl = () => problem('Error at "/budget/maxTokens": number must be at least 0\nSchema:\n  {"minimum": 0}\n');
    expect(await c.setBudget({ maxTokens: -5 })).toBe('Error at "/budget/maxTokens": number must be at least 0');
    expect(c.state.budget).toEqual({ maxTokens: 1000 });
    c.dispose();
  });

  it('a budget changed elsewhere (session.budget_changed) reads the recovery plan again', async () => {
    const { api, c } = await started();
    const contexts = api.count('context');
    api.stream.push(ev(SID, 11, 'session.budget_changed', { budget: { maxTokens: 9000 } }));
    await flush();
    expect(c.state.budget).toEqual({ maxTokens: 9000 });
    expect(api.count('context')).toBe(contexts + 1);
    c.openBudgetEditor();
    expect(c.state.budgetEditor).toBe(true);
    c.openBudgetEditor(false);
    expect(c.state.budgetEditor).toBe(false);
    c.dispose();
  });
});
