// Budgets and the stall watchdog (docs/inbox.md, "Budgets") as the shell
// sees them: how much of a session's token and cost budget its usage has
// taken, the stream's budget events folded into a pane's state, and the
// budget editor's form read into the API's Budget. Pure, for unit tests.
import type { SessionViewState, TurnView } from './session-state';
import type { Budget, TetherEvent, Usage } from './types';

/** The error code of a turn a budget stopped, and the 409 of work refused while over. */
export const BUDGET_EXCEEDED = 'budget_exceeded';

/** Did a budget stop this turn (it ended cancelled with error budget_exceeded)? */
export function stoppedByBudget(t: Pick<TurnView, 'state' | 'error'> | undefined): boolean {
  return !!t && t.state === 'cancelled' && t.error?.code === BUDGET_EXCEEDED;
}

/**
 * What a token budget counts of a usage, as tetherd counts it: the total
 * the agent gave, else the sum of the token members it gave.
 */
export function usedTokens(u: Usage | undefined): number {
  if (!u) return 0;
  if (u.totalTokens && u.totalTokens > 0) return u.totalTokens;
  return (u.inputTokens ?? 0) + (u.outputTokens ?? 0) + (u.cachedReadTokens ?? 0) + (u.cachedWriteTokens ?? 0);
}

export type BudgetLevel = 'ok' | 'high' | 'full';

/** How much of one limit is used: amber from 80 %, red at it (as the context gauge). */
export interface BudgetUse {
  used: number;
  max: number;
  /** used / max, not capped: over 1 once the budget is passed. */
  ratio: number;
  level: BudgetLevel;
}

function use(used: number, max: number): BudgetUse {
  const ratio = max > 0 ? used / max : 0;
  return { used, max, ratio, level: ratio >= 1 ? 'full' : ratio >= 0.8 ? 'high' : 'ok' };
}

/** The token budget's use, or undefined without one. */
export function tokenUse(b: Budget | undefined, u: Usage | undefined): BudgetUse | undefined {
  return b?.maxTokens && b.maxTokens > 0 ? use(usedTokens(u), b.maxTokens) : undefined;
}

/** The cost budget's use (a cost in another currency is not counted), or undefined without one. */
export function costUse(b: Budget | undefined, u: Usage | undefined): (BudgetUse & { currency: string }) | undefined {
  const max = b?.maxCost;
  if (!max || !(max.amount > 0)) return undefined;
  const spent = u?.cost && u.cost.currency === max.currency ? u.cost.amount : 0;
  return { ...use(spent, max.amount), currency: max.currency };
}

/** A budget that limits nothing is no budget. */
export function budgetOrNone(b: Budget | undefined): Budget | undefined {
  return b && (b.maxTokens || b.maxCost || b.maxTurnSeconds || b.stallSeconds) ? b : undefined;
}

/**
 * When a stalled turn's agent was last heard from: the turn.stalled
 * event says it; a snapshot only says when the stall was found, which is
 * the session's stall limit after it.
 */
export function stallSince(t: { stalledAt?: string; stalledSince?: string }, b: Budget | undefined): number | undefined {
  if (t.stalledSince) return Date.parse(t.stalledSince) || undefined;
  const at = t.stalledAt ? Date.parse(t.stalledAt) : NaN;
  if (Number.isNaN(at)) return undefined;
  return at - (b?.stallSeconds ?? 0) * 1000;
}

/**
 * The stream's budget events in a pane's state (the reducer's cursor and
 * session guards have passed): the budget changed, a turn stalled or was
 * heard from again. Undefined for any other event. budget.exceeded itself
 * changes nothing: the turn's end (turn.cancelled, reason
 * budget_exceeded) says it.
 */
export function applyBudgetEvent(s: SessionViewState, ev: TetherEvent): SessionViewState | undefined {
  switch (ev.type) {
    case 'session.budget_changed':
      return { ...s, budget: budgetOrNone(ev.data.budget) };
    case 'turn.stalled':
    case 'turn.stall_ended': {
      const id = ev.data.promptId;
      const t = id ? s.turns[id] : undefined;
      // A stall is of a running turn; one that ended has no stall to show.
      if (!t || t.state !== 'running') return s;
      const turn: TurnView =
        ev.type === 'turn.stalled' ? { ...t, stalledAt: ev.data.stalledAt, stalledSince: ev.data.since } : { ...t, stalledAt: undefined, stalledSince: undefined };
      return { ...s, turns: { ...s.turns, [t.promptId]: turn } };
    }
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------- the form

/** The editor's fields as typed; an empty one sets no limit. */
export interface BudgetForm {
  tokens: string;
  /** In the budget's currency (USD unless it has another). */
  cost: string;
  turn: string;
  turnUnit: 'minutes' | 'seconds';
  stall: string;
}

const text = (n: number | undefined) => (n ? String(n) : '');

/** The form of a budget: the turn's time in minutes when it is whole minutes. */
export function budgetForm(b: Budget | undefined): BudgetForm {
  const turn = b?.maxTurnSeconds ?? 0;
  const minutes = turn === 0 || turn % 60 === 0;
  return {
    tokens: text(b?.maxTokens),
    cost: text(b?.maxCost?.amount),
    turn: text(minutes ? turn / 60 : turn),
    turnUnit: minutes ? 'minutes' : 'seconds',
    stall: text(b?.stallSeconds),
  };
}

/**
 * The Budget a form says, whole (PATCH replaces it), or the first field
 * that is not a number. What the numbers may be (not negative, a cost
 * above 0) is the daemon's to say: its 400 is shown as it words it.
 */
export function budgetOfForm(f: BudgetForm, currency = 'USD'): { budget: Budget } | { invalid: 'tokens' | 'cost' | 'turn' | 'stall' } {
  const num = (v: string): number | null | undefined => {
    const x = v.trim();
    if (x === '') return undefined;
    const n = Number(x);
    return Number.isFinite(n) ? n : null;
  };
  const tokens = num(f.tokens);
  if (tokens === null) return { invalid: 'tokens' };
  const cost = num(f.cost);
  if (cost === null) return { invalid: 'cost' };
  const turn = num(f.turn);
  if (turn === null) return { invalid: 'turn' };
  const stall = num(f.stall);
  if (stall === null) return { invalid: 'stall' };
  const budget: Budget = {};
  if (tokens !== undefined) budget.maxTokens = tokens;
  if (cost !== undefined) budget.maxCost = { amount: cost, currency };
  if (turn !== undefined) budget.maxTurnSeconds = f.turnUnit === 'minutes' ? Math.round(turn * 60) : turn;
  if (stall !== undefined) budget.stallSeconds = stall;
  return { budget };
}
