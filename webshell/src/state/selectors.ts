// Derived facts about a session's state, shared by the reducer, the banner
// and the components.
import type { SessionViewState, TurnView } from './session-state';

export const TERMINAL_SESSION_STATES: ReadonlySet<string> = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);
export const TERMINAL_TURN_STATES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled', 'interrupted']);

/** Is a turn of this session queued or running right now? */
export function activeTurn(s: SessionViewState): TurnView | undefined {
  for (let i = s.turnOrder.length - 1; i >= 0; i--) {
    const t = s.turns[s.turnOrder[i]!];
    if (t && (t.state === 'running' || t.state === 'queued')) return t;
  }
  return undefined;
}

export function isTurnBusy(s: SessionViewState): boolean {
  if (activeTurn(s)) return true;
  if (s.state === 'RUNNING') return true;
  return Object.values(s.pending).some((p) => p.status === 'sending' || (p.status === 'accepted' && !s.turns[p.promptId]));
}

export function hasPendingPermission(s: SessionViewState): boolean {
  return Object.values(s.permissions).some((p) => p.state === 'pending');
}

export function isReadOnly(s: SessionViewState): boolean {
  return s.closed || (s.state !== undefined && TERMINAL_SESSION_STATES.has(s.state));
}

