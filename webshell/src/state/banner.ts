// The recovery banner's model: whether it shows, what it says and whether
// its Continue button is offered. Pure, so every hiding rule is a unit test.
import { BUDGET_EXCEEDED, costUse, tokenUse } from './budget';
import { hasPendingPermission, isReadOnly, isTurnBusy } from './selectors';
import type { SessionViewState } from './session-state';

export type BannerHideReason =
  | 'other_session'
  | 'no_recovery'
  | 'loading'
  | 'disconnected'
  | 'catching_up'
  | 'read_only'
  | 'permission_pending'
  | 'turn_active'
  | 'stale'
  | 'clean';

export type BannerKind = 'interrupted_prompt' | 'interrupted_turn' | 'degraded_history';

export interface BannerModel {
  visible: boolean;
  /** Why it is hidden (for tests and debugging). */
  hidden?: BannerHideReason;
  kind?: BannerKind;
  /** Offer the Continue button. */
  showContinue: boolean;
  /**
   * sending: the click's request is in flight; accepted: admitted, the
   * turn is not in the stream yet; refreshing: a decline asked for the
   * current recovery; unknown: the request failed ambiguously.
   */
  progress?: 'sending' | 'accepted' | 'refreshing' | 'unknown';
  error?: string;
  /** The daemon's reason why it cannot continue (when canContinue is false). */
  cannotReason?: string;
  /** The last decline's reason, when the refreshed plan still applies. */
  declinedReason?: string;
  interruptReason?: string;
  toolCalls: { id: string; title: string; kind: string }[];
  /** The daemon's own sentence (English), a fallback for unknown kinds. */
  notice?: string;
  /** The recovery report's gist: what the interrupted turn got done. */
  report?: BannerReport;
}

/** What the banner shows of a recovery report (docs/workspace.md). */
export interface BannerReport {
  /** Files changed since the turn began (path and status), at most REPORT_FILES. */
  files: { path: string; status: string }[];
  /** How many more changed files there are than `files` shows. */
  moreFiles: number;
  headMoved: boolean;
  /** The workspace part is not in yet (looked up right after the interruption). */
  pending: boolean;
  /** Why the executor could not tell what changed. */
  unknown?: string;
  /** Titles of the tool calls that finished before the interruption. */
  finished: string[];
  /** Titles of the commands still running when it was cut off. */
  running: string[];
}

/** The most changed files the banner names. */
export const REPORT_FILES = 10;

type Summary = NonNullable<SessionViewState['recovery']>['summary'];

/** The banner's gist of a summary's report (undefined when there is none). */
export function reportOf(sum: Summary): BannerReport | undefined {
  const r = sum.report;
  if (!r) return undefined;
  const ws = r.workspace;
  const files = ws && !ws.error ? ws.files : [];
  return {
    files: files.slice(0, REPORT_FILES).map((f) => ({ path: f.path, status: f.status })),
    moreFiles: Math.max(0, files.length - REPORT_FILES),
    headMoved: !!ws?.headMoved,
    pending: !ws,
    unknown: ws?.error || undefined,
    finished: r.toolCalls.filter((c) => c.finished).map((c) => c.title || c.id),
    running: r.runningCommands,
  };
}

const hidden = (reason: BannerHideReason): BannerModel => ({ visible: false, hidden: reason, showContinue: false, toolCalls: [] });

/**
 * The banner of session `s` as shown in a pane that shows `shownSessionId`.
 * Hidden while loading, disconnected, catching up, a turn is streaming, a
 * permission is pending, the session is read-only or terminal, or when the
 * recovery belongs to another session.
 */
export function bannerGate(s: SessionViewState, shownSessionId: string): BannerModel {
  if (shownSessionId !== s.sessionId) return hidden('other_session');
  const r = s.recovery;
  if (!r) return s.phase === 'ready' ? hidden('no_recovery') : hidden('loading');
  if (r.sessionId !== s.sessionId || r.sessionId !== shownSessionId) return hidden('other_session');
  if (s.phase !== 'ready') return hidden('loading');
  if (s.connection === 'catching_up') return hidden('catching_up');
  if (s.connection !== 'open') return hidden('disconnected');
  if (isReadOnly(s)) return hidden('read_only');
  if (hasPendingPermission(s)) return hidden('permission_pending');
  if (isTurnBusy(s)) return hidden('turn_active');
  // A turn event newer than the plan: the plan that follows it is on its way.
  if (r.seq < s.turnSeq) return hidden('stale');
  const sum = r.summary;
  if (sum.kind === 'clean') return hidden('clean');
  const base: BannerModel = {
    visible: true,
    kind: sum.kind,
    showContinue: false,
    interruptReason: sum.interruptReason,
    toolCalls: sum.danglingToolCalls ?? [],
    notice: sum.notice,
    report: reportOf(sum),
  };
  if (sum.kind === 'degraded_history') return base; // explanation only
  const c = s.continuation;
  if (s.recoveryRefreshing || c.status === 'declined') return { ...base, progress: 'refreshing' };
  if (c.status === 'sending') return { ...base, progress: 'sending' };
  if (c.status === 'accepted') return { ...base, progress: 'accepted' };
  if (c.status === 'unknown') return { ...base, progress: 'unknown', error: c.error };
  if (!sum.canContinue) return { ...base, cannotReason: sum.reason };
  // Still over its token or cost budget, as its usage says: the daemon
  // refuses the continuation until the budget is raised, whatever an
  // earlier plan said.
  if (overBudget(s)) return { ...base, cannotReason: BUDGET_EXCEEDED };
  return { ...base, showContinue: true, declinedReason: c.reason };
}

/** The session's usage has reached its token or cost budget. */
function overBudget(s: SessionViewState): boolean {
  return (tokenUse(s.budget, s.usage)?.ratio ?? 0) >= 1 || (costUse(s.budget, s.usage)?.ratio ?? 0) >= 1;
}
