// The state of one chat pane's session and the pure reducer that folds
// snapshots, stream events and the results of the user's actions into it.
//
// Rules this module enforces (and test/session-state.test.ts names):
// - every action carries the session id it belongs to; an action for any
//   other session leaves the state untouched (wrong-session guard);
// - load results carry the load generation; a stale load is ignored;
// - durable events are applied once, in cursor order; an event whose epoch
//   differs from the snapshot's is ignored (the controller reloads);
// - a terminal event settles only the turn whose promptId it carries;
// - recovery summaries are ordered by the cursor they are consistent with,
//   and reads started before local activity (a prompt, a continuation, a
//   cancel) are discarded, so an old read never resurrects a Continue;
// - a continuation is admitted locally at most once per interruption: the
//   click that moves it to `sending` is the only one that sends;
// - the snapshot is the transcript's latest page; an older page is merged
//   once, only into the load it was read for, in front of what the view
//   holds and without doubling anything (transcript-view.ts).
import { bannerGate } from './banner';
import { applyBudgetEvent, budgetOrNone, BUDGET_EXCEEDED } from './budget';
import { parsePosition } from './cursor';
import { placeOf, reportedExecutor, type ExecutorView } from './executor';
import { activeTurn, TERMINAL_SESSION_STATES, TERMINAL_TURN_STATES } from './selectors';
import { attachmentsOf, historyOf, mergeOlderPage, messageViewOf, promptTextOf, timelineOf, toolCallKey, turnViewOf, type HistoryView } from './transcript-view';
import type {
  AuthMethod,
  AvailableCommand,
  Budget,
  ConfigOptionView,
  ContentBlock,
  ContinueOutcome,
  Message,
  PermissionRequest,
  PlanEntry,
  RecoverySummary,
  Session,
  SessionContext,
  SessionMode,
  SessionOptionsView,
  SessionState,
  SessionStatus,
  StreamState,
  TetherEvent,
  ToolCall,
  Transcript,
  Turn,
  Usage,
} from './types';

export type { HistoryView };

export type TurnState = Turn['state'];
export type TurnKind = Turn['kind'];

export interface TurnView {
  promptId: string;
  /** The turn's number in its session, from 1 (Turn.seq, turn.queued's seq); absent from a daemon that does not say. */
  seq?: number;
  kind: TurnKind;
  state: TurnState;
  stopReason?: string;
  error?: { code: string; message: string };
  interruptReason?: string;
  continuesPromptId?: string;
  danglingToolCalls?: { id: string; title: string; kind: string }[];
  /** The prompt's text, shown while the turn waits in the queue. */
  text?: string;
  /** What the prompt carried besides text: images, files. */
  attachments?: PromptAttachment[];
  /** A rewind took the files back to before this turn (greyed, collapsible; never deleted). */
  rewound?: boolean;
  /** What the agent said the turn used: its tokens and its context window at its last report (no cost). */
  usage?: Usage;
  /** The running turn has had no output for the session's stallSeconds since then (turn.stalled). */
  stalledAt?: string;
  /** When its agent was last heard from (turn.stalled's since; a snapshot does not say). */
  stalledSince?: string;
}

/** A prompt's block other than text, as its user message shows it. */
export type PromptAttachment = { kind: 'image'; mimeType: string; data: string } | { kind: 'file'; name: string; embedded: boolean };

export interface MessageView {
  id: number;
  promptId?: string;
  role: Message['role'];
  text: string;
}

export interface PermissionView {
  requestId: string;
  promptId?: string;
  toolCallId?: string;
  title?: string;
  options: { optionId: string; name: string; kind: string }[];
  state: PermissionRequest['state'];
  selectedOptionId?: string;
  answering?: boolean;
}

// toolCallKey lives with the transcript's conversions; many modules import it from here.
export { toolCallKey };

export type TimelineItem =
  | { type: 'message'; id: number }
  /** id: the tool call's toolCallKey. */
  | { type: 'tool'; id: string }
  | { type: 'permission'; id: string }
  | { type: 'pending-prompt'; id: string }
  | { type: 'turn-start'; id: string }
  | { type: 'turn-end'; id: string };

/** A prompt this tab sent whose user message has not arrived yet. */
export interface PendingPrompt {
  promptId: string;
  text: string;
  /** The whole prompt when it is more than its text (images, mentioned files): a retry sends it again as is. */
  blocks?: ContentBlock[];
  status: 'sending' | 'accepted' | 'failed';
  error?: string;
}

export interface RecoveryView {
  summary: RecoverySummary;
  /** The session the summary was read for (guard: never shown elsewhere). */
  sessionId: string;
  /** Stream position the summary is consistent with (0 if unknown). */
  seq: number;
}

export type ContinuationStatus = 'idle' | 'sending' | 'accepted' | 'declined' | 'unknown';

export interface ContinuationState {
  status: ContinuationStatus;
  /**
   * The idempotency key sent as promptId. One key per interruption: a
   * retry after an ambiguous failure reuses it, so the daemon returns the
   * same turn instead of admitting a second one.
   */
  key?: string;
  /** The interrupted turn this continuation continues (recovery.promptId). */
  forPromptId?: string;
  /** The promptId of the admitted continuation turn. */
  promptId?: string;
  reason?: string;
  error?: string;
}

export type Phase = 'loading' | 'ready' | 'error';

export interface SessionViewState {
  sessionId: string;
  phase: Phase;
  loadGen: number;
  loadError?: string;
  connection: StreamState | 'idle';
  /** The stream has been live at least once (so a drop is a disconnect). */
  everOpen: boolean;
  session?: Session;
  state?: SessionState;
  closed: boolean;
  /** The agent process (see ExecutorView). */
  executor: ExecutorView;
  /** Whether the agent of the last start runs in its sandbox (absent before one started). */
  sandbox?: SandboxView;
  status?: SessionStatus;
  agent?: SessionContext['agent'];
  /** The agent's slash commands (the composer offers them on "/"). */
  availableCommands: AvailableCommand[];
  /** The agent's modes and config options (the composer's pickers). */
  options: SessionOptionsView;
  /**
   * What the agent said the session used: its latest context window and
   * cost, its tokens summed (GET /session/{id}, then usage.updated). Kept
   * apart from `session`, which a load may lack (its read failed).
   */
  usage?: Usage;
  /** The session's budget and stall watchdog (GET /session/{id}, session.budget_changed, PATCH); absent: none. */
  budget?: Budget;
  /** The pane's budget editor is open (its button, or the inbox's "Raise budget"). */
  budgetEditor: boolean;
  contextLost: boolean;
  epoch?: string;
  /** Last durable seq applied (snapshot cursor or event). */
  seq: number;
  /** Seq of the last turn lifecycle event (queued, started, terminal). */
  turnSeq: number;
  turns: Record<string, TurnView>;
  turnOrder: string[];
  messages: Record<number, MessageView>;
  /** By toolCallKey (promptId, toolCallId). */
  toolCalls: Record<string, ToolCall>;
  permissions: Record<string, PermissionView>;
  timeline: TimelineItem[];
  /** The transcript's pages: the latest is loaded first, older ones as the reader scrolls back. */
  history: HistoryView;
  plan?: PlanEntry[];
  pending: Record<string, PendingPrompt>;
  recovery?: RecoveryView;
  /** Recovery reads issued before this number are stale (local activity). */
  recoveryReadFloor: number;
  /** A decline asked for a fresh recovery read; hide the button until it lands. */
  recoveryRefreshing: boolean;
  continuation: ContinuationState;
  cancelling: boolean;
  resuming: boolean;
  notice?: { kind: 'error' | 'info'; text: string };
}


/** The agent's sandbox as the Web Shell shows it: on or off, why off, and the network policy. */
export interface SandboxView {
  state: 'on' | 'off';
  reason?: string;
  network?: string;
}

/** The sandbox a status read says, kept when it says none (no agent started yet). */
function sandboxOfStatus(prev: SandboxView | undefined, st: SessionStatus): SandboxView | undefined {
  const sb = st.sandbox;
  if (!sb || sb.state === 'not_started') return prev;
  return { state: sb.state, reason: sb.reason, network: sb.network };
}

export function initialSessionState(sessionId: string): SessionViewState {
  return {
    sessionId,
    phase: 'loading',
    loadGen: 0,
    connection: 'idle',
    everOpen: false,
    closed: false,
    executor: {},
    availableCommands: [],
    options: { modes: [], configOptions: [] },
    budgetEditor: false,
    contextLost: false,
    seq: 0,
    turnSeq: 0,
    turns: {},
    turnOrder: [],
    messages: {},
    toolCalls: {},
    permissions: {},
    timeline: [],
    history: { pages: 0, loading: false, rewound: {} },
    pending: {},
    recoveryReadFloor: 0,
    recoveryRefreshing: false,
    continuation: { status: 'idle' },
    cancelling: false,
    resuming: false,
  };
}

export type SessionAction =
  | { type: 'load/start'; sessionId: string; gen: number }
  | { type: 'load/failed'; sessionId: string; gen: number; error: string }
  | {
      type: 'load/snapshot';
      sessionId: string;
      gen: number;
      transcript: Transcript;
      context?: SessionContext;
      contextRead?: number;
      status?: SessionStatus;
      session?: Session;
    }
  /** An older page is being read (token: the page's pageToken, history.next when it was asked). */
  | { type: 'older/start'; sessionId: string; gen: number; token: string }
  | { type: 'older/failed'; sessionId: string; gen: number; token: string; error: string }
  | { type: 'load/older'; sessionId: string; gen: number; token: string; page: Transcript }
  | { type: 'connection'; sessionId: string; gen: number; state: StreamState }
  | { type: 'event'; sessionId: string; gen: number; event: TetherEvent }
  | { type: 'context'; sessionId: string; context: SessionContext; read: number }
  | { type: 'status'; sessionId: string; status: SessionStatus }
  | { type: 'prompt/sending'; sessionId: string; promptId: string; text: string; blocks?: ContentBlock[] }
  | { type: 'prompt/accepted'; sessionId: string; promptId: string; state: string }
  | { type: 'prompt/failed'; sessionId: string; promptId: string; error: string }
  | { type: 'prompt/discard'; sessionId: string; promptId: string }
  | { type: 'continue/click'; sessionId: string; key: string }
  | { type: 'continue/outcome'; sessionId: string; key: string; outcome: ContinueOutcome; errorText?: string }
  | { type: 'recovery/refreshing'; sessionId: string }
  | { type: 'cancel/start'; sessionId: string }
  | { type: 'cancel/done'; sessionId: string; error?: string }
  | { type: 'permission/answering'; sessionId: string; requestId: string }
  | { type: 'permission/failed'; sessionId: string; requestId: string; error: string }
  | { type: 'resume/start'; sessionId: string }
  | { type: 'resume/done'; sessionId: string; status?: SessionStatus; error?: string; code?: string; authMethods?: AuthMethod[] }
  | { type: 'notice'; sessionId: string; notice?: { kind: 'error' | 'info'; text: string } }
  | { type: 'budget/saved'; sessionId: string; session: Session }
  | { type: 'budget/editor'; sessionId: string; open: boolean }
  | { type: 'recovery/read-floor'; sessionId: string; floor: number };

function seqOf(cursor: string | undefined, epoch: string | undefined): number | undefined {
  const p = parsePosition(cursor);
  if (!p) return undefined;
  if (epoch !== undefined && p.epoch !== epoch) return undefined;
  return p.seq;
}

function settleContinuationIfDone(s: SessionViewState): SessionViewState {
  const c = s.continuation;
  const id = c.promptId ?? c.key;
  if (!id || (c.status !== 'accepted' && c.status !== 'sending' && c.status !== 'unknown')) return s;
  const t = s.turns[id];
  if (!t) return s;
  if (TERMINAL_TURN_STATES.has(t.state)) {
    // The continuation's own turn ended: settle it (and only it).
    return { ...s, continuation: { status: 'idle' } };
  }
  if (c.status !== 'accepted') {
    // Admission is visible in the log before (or without) the response.
    return { ...s, continuation: { ...c, status: 'accepted', promptId: id, error: undefined } };
  }
  return s;
}

function applyRecovery(s: SessionViewState, summary: RecoverySummary, seq: number): SessionViewState {
  if (s.recovery && s.recovery.sessionId === s.sessionId && seq < s.recovery.seq) return s; // older read
  let continuation = s.continuation;
  // A new interruption (another promptId) gets a fresh idempotency key.
  if (continuation.status === 'idle' && continuation.forPromptId && continuation.forPromptId !== summary.promptId) {
    continuation = { status: 'idle' };
  }
  if (continuation.status === 'declined') continuation = { status: 'idle', key: continuation.key, forPromptId: continuation.forPromptId, reason: continuation.reason };
  return { ...s, recovery: { summary, sessionId: s.sessionId, seq }, recoveryRefreshing: false, continuation };
}

function upsertTurn(s: SessionViewState, t: TurnView): SessionViewState {
  const prev = s.turns[t.promptId];
  const turns = { ...s.turns, [t.promptId]: { ...prev, ...t } };
  const turnOrder = prev ? s.turnOrder : [...s.turnOrder, t.promptId];
  return { ...s, turns, turnOrder };
}

function pushTimeline(s: SessionViewState, item: TimelineItem): SessionViewState {
  if (s.timeline.some((x) => x.type === item.type && x.id === item.id)) return s;
  return { ...s, timeline: [...s.timeline, item] };
}

function dropPending(s: SessionViewState, promptId: string): SessionViewState {
  if (!s.pending[promptId]) return s;
  const pending = { ...s.pending };
  delete pending[promptId];
  const timeline = s.timeline.filter((x) => !(x.type === 'pending-prompt' && x.id === promptId));
  return { ...s, pending, timeline };
}

function applySnapshot(s: SessionViewState, a: Extract<SessionAction, { type: 'load/snapshot' }>): SessionViewState {
  const t = a.transcript;
  const pos = parsePosition(t.cursor);
  const turns: Record<string, TurnView> = {};
  const turnOrder: string[] = [];
  for (const turn of t.turns) {
    turns[turn.promptId] = turnViewOf(turn);
    turnOrder.push(turn.promptId);
  }
  const messages: Record<number, MessageView> = {};
  for (const m of t.messages) messages[m.id] = messageViewOf(m);
  const toolCalls: Record<string, ToolCall> = {};
  for (const c of t.toolCalls) toolCalls[toolCallKey(c.promptId, c.id)] = c;
  const permissions: Record<string, PermissionView> = {};
  for (const p of t.pendingPermissions)
    permissions[p.id] = {
      requestId: p.id,
      promptId: p.promptId,
      toolCallId: p.toolCallId,
      title: p.title,
      options: p.options,
      state: p.state,
      selectedOptionId: p.selectedOptionId,
    };
  let timeline = timelineOf(t);
  // Prompts this tab sent that the snapshot does not show yet stay visible.
  const pending: Record<string, PendingPrompt> = {};
  for (const p of Object.values(s.pending)) {
    const hasUserMessage = t.messages.some((m) => m.role === 'user' && m.promptId === p.promptId);
    const turn = turns[p.promptId];
    if (hasUserMessage || (turn && TERMINAL_TURN_STATES.has(turn.state))) continue;
    pending[p.promptId] = p;
    timeline = [...timeline, { type: 'pending-prompt', id: p.promptId }];
  }
  let next: SessionViewState = {
    ...s,
    phase: 'ready',
    loadError: undefined,
    epoch: pos?.epoch ?? t.eventEpoch,
    seq: pos?.seq ?? 0,
    turnSeq: 0,
    turns,
    turnOrder,
    messages,
    toolCalls,
    permissions,
    timeline,
    // A (re)load starts over from the latest page.
    history: historyOf(t),
    plan: t.plan,
    pending,
    // A reload starts recovery ordering afresh (the epoch may differ).
    recovery: undefined,
  };
  if (a.session) {
    next.session = a.session;
    next.state = a.session.state;
    // The session read is the snapshot's usage; a usage.updated after the
    // transcript's cursor replaces it with the daemon's running total.
    next.usage = a.session.usage ?? next.usage;
    next.budget = budgetOrNone(a.session.budget);
    next.contextLost = a.session.contextLost ?? next.contextLost;
    if (a.session.closedAt) next.closed = true;
    const ex = a.session.executor;
    if (ex) next.executor = { status: ex.status, error: ex.errorMessage, ...placeOf(next.executor, ex.runtime, ex.host) };
  }
  if (a.status) next = applyStatus(next, a.status);
  if (a.context) next = applyContext(next, a.context, a.contextRead ?? next.recoveryReadFloor);
  // Reconcile a continuation the snapshot can tell about.
  const c = next.continuation;
  if (c.key && (c.status === 'unknown' || c.status === 'sending' || c.status === 'accepted')) {
    if (turns[c.promptId ?? c.key]) next = settleContinuationIfDone(next);
    else if (c.status === 'unknown' || c.status === 'accepted') {
      // The daemon never admitted it (a reload is authoritative): offer the
      // button again, with the same key so a late admission stays unique.
      next = { ...next, continuation: { status: 'idle', key: c.key, forPromptId: c.forPromptId } };
    }
  }
  return next;
}

function applyStatus(s: SessionViewState, st: SessionStatus): SessionViewState {
  return {
    ...s,
    status: st,
    state: st.state ?? s.state,
    executor: reportedExecutor(s.executor, st.executorStatus, st.errorMessage ?? (st.executorStatus === 'error' ? s.executor.error : undefined), st.errorCode, undefined, {
      runtime: st.runtime,
    }),
    sandbox: sandboxOfStatus(s.sandbox, st),
    contextLost: st.contextLost ?? s.contextLost,
    closed: s.closed || TERMINAL_SESSION_STATES.has(st.state),
  };
}

/** The agent's commands, modes and options from a context or a session.options_changed event. */
function optionsOf(d: {
  availableCommands?: AvailableCommand[];
  availableModes?: SessionMode[];
  currentMode?: string;
  configOptions?: Array<Record<string, unknown>>;
}): Pick<SessionViewState, 'availableCommands' | 'options'> {
  const options: SessionOptionsView = { modes: d.availableModes ?? [], configOptions: (d.configOptions ?? []).flatMap(configOptionOf) };
  if (d.currentMode !== undefined) options.currentMode = d.currentMode;
  return { availableCommands: d.availableCommands ?? [], options };
}

function configOptionOf(o: Record<string, unknown>): ConfigOptionView[] {
  if (typeof o['id'] !== 'string') return [];
  const base = { id: o['id'], name: typeof o['name'] === 'string' ? o['name'] : o['id'] };
  if (o['type'] === 'boolean') return [{ ...base, type: 'boolean', value: o['currentValue'] === true }];
  if (o['type'] !== 'select') return []; // a kind this shell does not know: not offered
  // Flat options, or groups of options: both become one list.
  const flat = (Array.isArray(o['options']) ? (o['options'] as Array<Record<string, unknown>>) : []).flatMap((e) =>
    Array.isArray(e['options']) ? (e['options'] as Array<Record<string, unknown>>) : [e],
  );
  const choices = flat
    .filter((e) => typeof e['value'] === 'string')
    .map((e) => ({ value: e['value'] as string, name: typeof e['name'] === 'string' ? (e['name'] as string) : (e['value'] as string) }));
  return [{ ...base, type: 'select', value: typeof o['currentValue'] === 'string' ? o['currentValue'] : '', choices }];
}

function applyContext(s: SessionViewState, ctx: SessionContext, read: number): SessionViewState {
  let next: SessionViewState = {
    ...s,
    agent: ctx.agent,
    ...optionsOf(ctx),
  };
  if (read < s.recoveryReadFloor) return next; // issued before local activity
  const seq = seqOf(ctx.cursor, s.epoch);
  if (seq === undefined) return next; // another epoch: the controller reloads
  next = applyRecovery(next, ctx.recovery, seq);
  return settleContinuationIfDone(next);
}

function applyEvent(s: SessionViewState, ev: TetherEvent): SessionViewState {
  const data = ev.data as { sessionId?: string; promptId?: string };
  if (data && data.sessionId && data.sessionId !== s.sessionId) return s; // another session's event
  // Control frames are the controller's business.
  if (ev.type === 'resync_required' || ev.type === 'replay_complete' || ev.type === 'stream_lagged') return s;
  const pos = parsePosition(ev.id);
  if (ev.id !== undefined) {
    if (!pos || (s.epoch !== undefined && pos.epoch !== s.epoch)) return s; // other epoch: reload decides
    if (pos.seq <= s.seq) return s; // already applied (snapshot or replay)
  }
  const seq = pos?.seq ?? s.seq;
  let n: SessionViewState = { ...s, seq };
  const budgeted = applyBudgetEvent(n, ev);
  if (budgeted) return budgeted;
  switch (ev.type) {
    case 'session.created':
      return { ...n, state: ev.data.state };
    case 'session.state_changed':
      return { ...n, state: ev.data.state, closed: n.closed || TERMINAL_SESSION_STATES.has(ev.data.state) };
    case 'session.executor_status':
      return {
        ...n,
        executor: reportedExecutor(n.executor, ev.data.status, ev.data.error, ev.data.errorCode, undefined, { runtime: ev.data.runtime, host: ev.data.host }),
        sandbox: ev.data.sandbox ? { state: ev.data.sandbox, reason: ev.data.sandboxReason, network: n.sandbox?.network } : n.sandbox,
        resuming: ev.data.status === 'starting' ? n.resuming : false,
      };
    case 'session.resumed':
      // History injection restores the context with the next prompt: not lost.
      return { ...n, contextLost: !ev.data.contextRestored && ev.data.strategy !== 'history_injection' };
    case 'session.recovery_changed':
      return settleContinuationIfDone(applyRecovery(n, ev.data.recovery, seq));
    case 'session.closed':
      return { ...n, closed: true, state: ev.data.state };
    case 'session.options_changed':
      return { ...n, ...optionsOf(ev.data) };
    case 'session.rewound': {
      // Rewound turns stay, greyed; an undo brings them back.
      const turns = { ...n.turns };
      // Kept for the turns of older pages too: one read before this event
      // may land after it.
      const marks = { ...n.history.rewound };
      for (const [ids, rewound] of [[ev.data.rewound, true], [ev.data.restored ?? [], false]] as const)
        for (const id of ids) {
          marks[id] = rewound;
          if (turns[id]) turns[id] = { ...turns[id]!, rewound };
        }
      const session = n.session && {
        ...n.session,
        lastRewind: { id: ev.data.rewindId, toPromptId: ev.data.toPromptId, undoes: ev.data.undoes, rewound: ev.data.rewound, restored: ev.data.restored, turns: ev.data.turns, at: ev.data.at },
      };
      return { ...n, turns, session, history: { ...n.history, rewound: marks } };
    }
    case 'session.forked':
      return n.session ? { ...n, session: { ...n.session, forkedFrom: { sessionId: ev.data.fromSessionId, promptId: ev.data.atPromptId, handoff: ev.data.handoff } } } : n;
    case 'turn.queued':
    case 'turn.started': {
      const d = ev.data;
      if (!d.promptId) return n;
      const prev = n.turns[d.promptId];
      if (prev && TERMINAL_TURN_STATES.has(prev.state)) return n;
      const turnNo = ('seq' in d && d.seq ? d.seq : undefined) ?? prev?.seq;
      n = upsertTurn(n, {
        promptId: d.promptId,
        ...(turnNo !== undefined ? { seq: turnNo } : {}),
        kind: d.kind,
        state: ev.type === 'turn.started' ? 'running' : 'queued',
        continuesPromptId: 'continuesPromptId' in d ? d.continuesPromptId : prev?.continuesPromptId,
        text: ('prompt' in d ? promptTextOf(d.prompt) : undefined) ?? prev?.text,
        attachments: ('prompt' in d ? attachmentsOf(d.prompt) : undefined) ?? prev?.attachments,
      });
      n = { ...n, turnSeq: seq };
      if (d.kind === 'continue') n = pushTimeline(n, { type: 'turn-start', id: d.promptId });
      if (n.pending[d.promptId]?.status === 'sending') n = { ...n, pending: { ...n.pending, [d.promptId]: { ...n.pending[d.promptId]!, status: 'accepted' } } };
      return settleContinuationIfDone(n);
    }
    case 'turn.completed':
    case 'turn.failed':
    case 'turn.cancelled':
    case 'turn.interrupted': {
      const d = ev.data;
      const promptId = d.promptId;
      if (!promptId) return n; // settles nothing without its promptId
      const prev = n.turns[promptId];
      const state = (d.state as TurnState) ?? (ev.type.slice(5) as TurnState);
      const view: TurnView = {
        promptId,
        kind: prev?.kind ?? 'prompt',
        state: TERMINAL_TURN_STATES.has(state) ? state : (ev.type.slice(5) as TurnState),
        continuesPromptId: prev?.continuesPromptId,
        // Its end ends any stall, with no event of its own.
        stalledAt: undefined,
        stalledSince: undefined,
      };
      if (ev.type === 'turn.completed' || ev.type === 'turn.cancelled') view.stopReason = ev.data.stopReason;
      // A budget stopped it: the turn keeps it as its error (as the transcript's turn does).
      if (ev.type === 'turn.cancelled' && ev.data.reason === BUDGET_EXCEEDED) view.error = { code: BUDGET_EXCEEDED, message: ev.data.message ?? '' };
      if (ev.type === 'turn.failed') view.error = { code: ev.data.code, message: ev.data.message };
      if (ev.type === 'turn.interrupted') {
        view.interruptReason = ev.data.reason;
        view.danglingToolCalls = ev.data.danglingToolCalls;
      }
      n = upsertTurn(n, view);
      n = { ...n, turnSeq: seq };
      n = pushTimeline(n, { type: 'turn-end', id: promptId });
      n = dropPending(n, promptId);
      // The running turn ended: a cancel was about it, even when a queued
      // turn (kept by the cancel) runs next.
      if (!activeTurn(n) || prev?.state === 'running') n = { ...n, cancelling: false };
      // Permissions of the settled turn can no longer be answered.
      const perms = Object.values(n.permissions).filter((p) => p.promptId === promptId && p.state === 'pending');
      if (perms.length) {
        const permissions = { ...n.permissions };
        for (const p of perms) permissions[p.requestId] = { ...p, state: 'expired', answering: false };
        n = { ...n, permissions };
      }
      return settleContinuationIfDone(n);
    }
    case 'message.added':
    case 'message.chunk': {
      const d = ev.data;
      const prev = n.messages[d.messageId];
      const text = ev.type === 'message.chunk' && prev ? prev.text + d.text : ev.type === 'message.chunk' ? d.text : d.text;
      const msg: MessageView = { id: d.messageId, promptId: d.promptId ?? prev?.promptId, role: d.role, text };
      n = { ...n, messages: { ...n.messages, [d.messageId]: msg } };
      if (!prev) {
        const item: TimelineItem = { type: 'message', id: d.messageId };
        // A prompt's message arrives when its turn starts: after what ran
        // before it, wherever its bubble sat while it was queued.
        if (d.role === 'user' && d.promptId && n.pending[d.promptId]) n = pushTimeline(dropPending(n, d.promptId), item);
        else n = pushTimeline(n, item);
      }
      return n;
    }
    case 'tool_call.started':
    case 'tool_call.updated': {
      const d = ev.data;
      // Another turn's call with the same id is another call.
      const key = toolCallKey(d.promptId, d.toolCallId);
      const prev = n.toolCalls[key];
      const call: ToolCall = {
        ...prev,
        id: d.toolCallId,
        promptId: d.promptId,
        title: d.title || prev?.title || '',
        kind: d.kind ?? prev?.kind,
        status: d.status,
        interrupted: d.interrupted,
        content: (d.content as ToolCall['content']) ?? prev?.content,
        locations: (d.locations as ToolCall['locations']) ?? prev?.locations,
        rawInput: d.rawInput ?? prev?.rawInput,
        rawOutput: d.rawOutput ?? prev?.rawOutput,
      };
      n = { ...n, toolCalls: { ...n.toolCalls, [key]: call } };
      return prev ? n : pushTimeline(n, { type: 'tool', id: key });
    }
    case 'plan.updated':
      return { ...n, plan: ev.data.entries };
    case 'usage.updated': {
      // data.session is the daemon's projection after this report (window
      // and cost latest, tokens summed): it replaces, never adds, so an
      // event seen again after a reload changes nothing.
      const d = ev.data;
      n = { ...n, usage: d.session };
      const turn = d.promptId ? n.turns[d.promptId] : undefined;
      // A report without a promptId, or for a turn this view does not hold,
      // leaves the turns alone (a reload brings the turn with its usage).
      if (turn && d.turn) n = { ...n, turns: { ...n.turns, [turn.promptId]: { ...turn, usage: d.turn } } };
      return n;
    }
    case 'permission.requested': {
      const d = ev.data;
      const p: PermissionView = {
        requestId: d.requestId,
        promptId: d.promptId,
        toolCallId: d.toolCallId,
        title: d.title,
        options: d.options,
        state: 'pending',
      };
      n = { ...n, permissions: { ...n.permissions, [d.requestId]: p } };
      return pushTimeline(n, { type: 'permission', id: d.requestId });
    }
    case 'permission.resolved': {
      const d = ev.data;
      const prev = n.permissions[d.requestId];
      const p: PermissionView = {
        ...(prev ?? { requestId: d.requestId, options: [] }),
        state: d.state,
        selectedOptionId: d.optionId,
        answering: false,
        promptId: d.promptId ?? prev?.promptId,
      };
      return { ...n, permissions: { ...n.permissions, [d.requestId]: p } };
    }
    case 'task.state_changed':
      return n;
    default:
      return n; // an event type this shell does not know: ignore, never misfile
  }
}

export function sessionReducer(s: SessionViewState, a: SessionAction): SessionViewState {
  if (a.sessionId !== s.sessionId) return s; // wrong-session guard
  switch (a.type) {
    case 'load/start':
      return { ...s, phase: s.phase === 'ready' ? 'ready' : 'loading', loadGen: a.gen, connection: s.connection === 'idle' ? 'idle' : 'connecting' };
    case 'load/failed':
      if (a.gen !== s.loadGen) return s;
      return { ...s, phase: s.phase === 'ready' ? 'ready' : 'error', loadError: a.error };
    case 'load/snapshot':
      if (a.gen !== s.loadGen) return s;
      return applySnapshot(s, a);
    case 'older/start':
      // Only the page the view needs next, once at a time, of this load.
      if (a.gen !== s.loadGen || s.phase !== 'ready' || a.token !== s.history.next || s.history.loading) return s;
      return { ...s, history: { ...s.history, loading: true, error: undefined } };
    case 'older/failed':
      if (a.gen !== s.loadGen || a.token !== s.history.next) return s;
      return { ...s, history: { ...s.history, loading: false, error: a.error } };
    case 'load/older':
      // A page of another load (a reload started over) or one merged
      // already (its token is no longer the next) is dropped.
      if (a.gen !== s.loadGen || s.phase !== 'ready' || a.token !== s.history.next) return s;
      return mergeOlderPage(s, a.page);
    case 'connection': {
      if (a.gen !== s.loadGen) return s;
      return { ...s, connection: a.state, everOpen: s.everOpen || a.state === 'open' };
    }
    case 'event':
      if (a.gen !== s.loadGen || s.phase !== 'ready') return s;
      return applyEvent(s, a.event);
    case 'context':
      if (s.phase !== 'ready') return s;
      return applyContext(s, a.context, a.read);
    case 'status':
      return applyStatus(s, a.status);
    case 'prompt/sending': {
      const pending = { ...s.pending, [a.promptId]: { promptId: a.promptId, text: a.text, ...(a.blocks ? { blocks: a.blocks } : {}), status: 'sending' as const } };
      return { ...pushTimeline({ ...s, pending }, { type: 'pending-prompt', id: a.promptId }), notice: undefined };
    }
    case 'prompt/accepted': {
      const p = s.pending[a.promptId];
      if (!p) return s;
      if (TERMINAL_TURN_STATES.has(a.state) && !s.turns[a.promptId]) return s;
      return { ...s, pending: { ...s.pending, [a.promptId]: { ...p, status: 'accepted' } } };
    }
    case 'prompt/failed': {
      const p = s.pending[a.promptId];
      if (!p) return s;
      return { ...s, pending: { ...s.pending, [a.promptId]: { ...p, status: 'failed', error: a.error } } };
    }
    case 'prompt/discard':
      return dropPending(s, a.promptId);
    case 'continue/click': {
      // The single gate of continuation: only a visible Continue button
      // admits a click; the state it moves to hides the button at once.
      const b = canClickContinue(s);
      if (!b) return s;
      const forPromptId = s.recovery?.summary.promptId;
      const key = s.continuation.key && s.continuation.forPromptId === forPromptId ? s.continuation.key : a.key;
      return { ...s, continuation: { status: 'sending', key, forPromptId }, notice: undefined };
    }
    case 'continue/outcome': {
      const c = s.continuation;
      if (c.key !== a.key || (c.status !== 'sending' && c.status !== 'accepted')) {
        // The stream settled it already, or this is an old click's answer.
        if (c.key === a.key && a.outcome.kind === 'accepted' && c.status === 'idle') return s;
        return s;
      }
      const o = a.outcome;
      if (o.kind === 'accepted') {
        const n = { ...s, continuation: { ...c, status: 'accepted' as const, promptId: o.promptId, error: undefined } };
        return settleContinuationIfDone(n);
      }
      if (o.kind === 'declined') {
        return { ...s, continuation: { status: 'declined', key: c.key, forPromptId: c.forPromptId, reason: o.reason }, recoveryRefreshing: true };
      }
      return { ...s, continuation: { ...c, status: 'unknown', error: a.errorText ?? 'unknown error' } };
    }
    case 'recovery/refreshing':
      return { ...s, recoveryRefreshing: true };
    case 'recovery/read-floor':
      return a.floor > s.recoveryReadFloor ? { ...s, recoveryReadFloor: a.floor } : s;
    case 'cancel/start':
      return { ...s, cancelling: true };
    case 'cancel/done':
      return { ...s, cancelling: a.error ? false : s.cancelling && !!activeTurn(s), notice: a.error ? { kind: 'error', text: a.error } : s.notice };
    case 'permission/answering': {
      const p = s.permissions[a.requestId];
      if (!p || p.state !== 'pending') return s;
      return { ...s, permissions: { ...s.permissions, [a.requestId]: { ...p, answering: true } } };
    }
    case 'permission/failed': {
      const p = s.permissions[a.requestId];
      if (!p) return s;
      return { ...s, permissions: { ...s.permissions, [a.requestId]: { ...p, answering: false } }, notice: { kind: 'error', text: a.error } };
    }
    case 'resume/start':
      return { ...s, resuming: true, notice: undefined };
    case 'resume/done': {
      const n = { ...s, resuming: false };
      if (a.error) {
        const executor = reportedExecutor(n.executor, 'error', a.error, a.code, a.authMethods);
        // An auth failure has its own banner; a generic notice would repeat it.
        if (a.code === 'agent_auth_required') return { ...n, executor };
        return { ...n, notice: { kind: 'error', text: a.error }, executor };
      }
      return a.status ? applyStatus(n, a.status) : n;
    }
    case 'notice':
      return { ...s, notice: a.notice };
    case 'budget/saved':
      return { ...s, session: a.session, budget: budgetOrNone(a.session.budget) };
    case 'budget/editor':
      return { ...s, budgetEditor: a.open };
  }
}

/** Whether a Continue click may be admitted now (see banner.ts for the UI). */
export function canClickContinue(s: SessionViewState): boolean {
  return bannerGate(s, s.sessionId).showContinue;
}

