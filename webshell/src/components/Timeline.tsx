import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { reasonText, useT } from '../i18n';
import type { PermissionView, SessionViewState, TimelineItem, TurnView } from '../state/session-state';
import type { PlanEntry } from '../state/types';
import { activeTurn } from '../state/selectors';
import { IconContinue, IconLock } from './Icons';
import { RichText } from './RichText';
import { ToolCallView } from './ToolCallView';
import { UserText } from './UserText';
import { TurnChangesButton, nextTurns, turnWrites, useTurnChanged, type TurnWrites } from './TurnChanges';
import { RewoundFold, TurnBranchActions, itemTurn } from './Branching';
import { TurnUsage } from './Usage';
import { StallNotice } from './Budget';
import { stoppedByBudget } from '../state/budget';
import { TimelineHead } from './TimelineHead';

export interface TimelineProps {
  s: SessionViewState;
  onRetryPrompt: (promptId: string) => void;
  onDiscardPrompt: (promptId: string) => void;
  /** Withdraws a queued prompt; without it queued prompts are not listed. */
  onWithdrawTurn?: (promptId: string) => void;
  /** Shows what a turn changed in the workspace; without it no link is offered. */
  onShowTurnChanges?: (promptId: string) => void;
  /** Cancels the running turn (a stalled turn's notice offers it). */
  onCancelTurn?: () => void;
  /** Reads the page of turns before the loaded ones (SessionController.loadOlder). */
  onLoadOlder?: () => void;
}

/** What the timeline's turn ends need of the whole session, computed once per render. */
interface TurnFacts {
  writes: Map<string, TurnWrites>;
  next: Map<string, string | undefined>;
}

function Item({ item, s, facts, onRetryPrompt, onDiscardPrompt, onWithdrawTurn, onShowTurnChanges }: { item: TimelineItem; facts: TurnFacts } & TimelineProps) {
  const { t } = useT();
  switch (item.type) {
    case 'message': {
      const m = s.messages[item.id];
      if (!m) return null;
      if (m.role === 'user')
        return (
          <div class="msg msg--user" data-testid="user-message" data-prompt-id={m.promptId}>
            <div class="msg__bubble">
              <UserText text={m.text} attachments={m.promptId ? s.turns[m.promptId]?.attachments : undefined} />
            </div>
          </div>
        );
      if (m.role === 'thought')
        return (
          <details class="msg msg--thought" data-testid="thought">
            <summary>{t('msg.thought')}</summary>
            <RichText text={m.text} />
          </details>
        );
      if (m.role === 'system')
        return (
          <div class="msg msg--system" role="note" data-testid="system-message">
            {m.text}
          </div>
        );
      return (
        <div class="msg msg--agent" data-testid="agent-message" data-prompt-id={m.promptId}>
          <RichText text={m.text} />
        </div>
      );
    }
    case 'pending-prompt': {
      const p = s.pending[item.id];
      if (!p) return null;
      return (
        <div class={`msg msg--user msg--pending${p.status === 'failed' ? ' msg--failed' : ''}`} data-testid="pending-message" data-prompt-id={p.promptId}>
          <div class="msg__bubble">
            <RichText text={p.text} />
          </div>
          {p.status !== 'failed' && s.turns[p.promptId]?.state === 'queued' ? (
            <QueuedMeta promptId={p.promptId} onWithdraw={onWithdrawTurn} />
          ) : p.status === 'failed' ? (
            <div class="msg__meta" role="alert">
              {t('msg.failed', { error: p.error ?? '' })}{' '}
              <button type="button" class="btn btn--link" onClick={() => onRetryPrompt(p.promptId)}>
                {t('msg.retry')}
              </button>{' '}
              <button type="button" class="btn btn--link" onClick={() => onDiscardPrompt(p.promptId)}>
                {t('msg.discard')}
              </button>
            </div>
          ) : (
            <div class="msg__meta">{t('msg.sending')}</div>
          )}
        </div>
      );
    }
    case 'tool': {
      const c = s.toolCalls[item.id];
      return c ? <ToolCallView call={c} /> : null;
    }
    case 'permission': {
      const p = s.permissions[item.id];
      if (!p || p.state === 'pending') return null; // pending ones sit above the composer
      return <ResolvedPermission p={p} />;
    }
    case 'turn-start':
      return (
        <div class="divider" role="separator" data-testid="continued-divider" data-auto={isAutoContinuation(item.id) ? 'true' : undefined}>
          <span>
            <IconContinue /> {t(isAutoContinuation(item.id) ? 'turn.autoContinued' : 'turn.continued')}
          </span>
        </div>
      );
    case 'turn-end':
      return <TurnEnd promptId={item.id} s={s} facts={facts} onShowTurnChanges={onShowTurnChanges} />;
  }
}

/**
 * A turn's end: its outcome when it is worth a line (cancelled, failed,
 * interrupted), and the link to what it changed where it changed files. A
 * withdrawn prompt has no end to show: it never ran, and its bubble is gone.
 */
function TurnEnd({ promptId, s, facts, onShowTurnChanges }: { promptId: string; s: SessionViewState; facts: TurnFacts; onShowTurnChanges?: (promptId: string) => void }) {
  const { t, lang } = useT();
  const turn = s.turns[promptId];
  const writes = onShowTurnChanges ? facts.writes.get(promptId) : undefined;
  const changed = useTurnChanged(s.sessionId, promptId, writes, facts.next.get(promptId));
  if (!turn || turn.stopReason === 'withdrawn') return null;
  const budget = stoppedByBudget(turn);
  const text = budget
    ? turn.error?.message
      ? t('budget.stopped', { message: turn.error.message })
      : t('budget.stoppedPlain')
    : turn.state === 'cancelled'
      ? t('turn.cancelled')
      : turn.state === 'failed'
        ? t('turn.failed', { error: turn.error?.message ?? turn.error?.code ?? '' })
        : turn.state === 'interrupted'
          ? t('turn.interrupted', { reason: reasonText(lang, turn.interruptReason) || '—' })
          : '';
  const changes = changed && onShowTurnChanges && <TurnChangesButton promptId={turn.promptId} onShow={onShowTurnChanges} />;
  // What the agent said the turn used, beside its other facts.
  const usage = turn.usage && <TurnUsage usage={turn.usage} />;
  const explained = turn.state === 'interrupted' && Object.values(s.messages).some((m) => m.role === 'system' && m.promptId === turn.promptId);
  const branch = <TurnBranchActions s={s} promptId={turn.promptId} />;
  if (!text || explained)
    return (
      <>
        {(changes || usage) && (
          <div class="turn-end turn-end--quiet" data-testid={changes ? 'turn-end-changes' : 'turn-end-usage'} data-prompt-id={turn.promptId}>
            {usage}
            {usage && changes && ' · '}
            {changes}
          </div>
        )}
        {branch}
      </>
    );
  return (
    <>
      <div
        class={`turn-end turn-end--${budget ? 'budget' : turn.state}`}
        data-testid="turn-end"
        data-turn-state={turn.state}
        data-stopped-by={budget ? 'budget' : undefined}
        data-prompt-id={turn.promptId}
      >
        {text}
        {changes && <> · {changes}</>}
        {usage && <> · {usage}</>}
      </div>
      {branch}
    </>
  );
}

/**
 * The timeline's items with each run of rewound turns greyed and folded
 * behind one "n rewound turns · Show" line (open: shown, greyed).
 */
function withRewound(s: SessionViewState, items: TimelineItem[], open: boolean, toggle: () => void, render: (item: TimelineItem) => preact.VNode | null) {
  const out: (preact.VNode | null)[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const turn = s.turns[itemTurn(s, item)];
    if (!turn?.rewound) {
      out.push(render(item));
      continue;
    }
    // A run of items of rewound turns: one fold before it.
    const run: TimelineItem[] = [];
    const turns = new Set<string>();
    for (; i < items.length && s.turns[itemTurn(s, items[i]!)]?.rewound; i++) {
      run.push(items[i]!);
      turns.add(itemTurn(s, items[i]!));
    }
    i--;
    out.push(<RewoundFold key={`fold:${run[0]!.type}:${run[0]!.id}`} count={turns.size} open={open} onToggle={toggle} />);
    if (open)
      for (const r of run)
        out.push(
          <div key={`rewound:${r.type}:${r.id}`} class="is-rewound" data-testid="rewound-item">
            {render(r)}
          </div>,
        );
  }
  return out;
}

/** "Queued · Withdraw": a prompt waiting behind the running turn, which can be taken back until it runs. */
function QueuedMeta({ promptId, onWithdraw }: { promptId: string; onWithdraw?: (promptId: string) => void }) {
  const { t } = useT();
  return (
    <div class="msg__meta" data-testid="queued">
      {t('turn.queuedLabel')}
      {onWithdraw && (
        <>
          {' · '}
          <button type="button" class="btn btn--link" onClick={() => onWithdraw(promptId)}>
            {t('turn.withdraw')}
          </button>
        </>
      )}
    </div>
  );
}

function ResolvedPermission({ p }: { p: PermissionView }) {
  const { t } = useT();
  const opt = p.options.find((o) => o.optionId === p.selectedOptionId);
  const text =
    p.state === 'selected' ? t('perm.selected', { option: opt?.name ?? p.selectedOptionId ?? '' }) : p.state === 'expired' ? t('perm.expired') : t('perm.cancelled');
  return (
    <div class="perm-record" data-testid="permission-record">
      <IconLock /> {p.title ? <strong>{p.title}</strong> : null} — {text}
    </div>
  );
}

/**
 * The prompts waiting in the queue, in the order they run (e.g. held since a
 * restart), each with a button that withdraws it before it reaches the agent.
 */
export function QueuedPrompts({ s, onWithdraw }: { s: SessionViewState; onWithdraw: (promptId: string) => void }) {
  const { t } = useT();
  const queued = s.turnOrder.map((id) => s.turns[id]).filter((q) => q && q.state === 'queued' && q.kind !== 'continue' && !s.pending[q.promptId]);
  if (queued.length === 0) return null;
  return (
    <ol class="queued" aria-label={t('turn.queuedLabel')}>
      {queued.map((q) => (
        <li key={q!.promptId} class="msg msg--user msg--queued" data-prompt-id={q!.promptId}>
          <div class="msg__bubble">{q!.text ?? ''}</div>
          <QueuedMeta promptId={q!.promptId} onWithdraw={onWithdraw} />
        </li>
      ))}
    </ol>
  );
}

/** A prompt this tab sent that waits in the queue. */
function queuedHere(s: SessionViewState, item: TimelineItem): boolean {
  return item.type === 'pending-prompt' && s.pending[item.id]?.status !== 'failed' && s.turns[item.id]?.state === 'queued';
}

/**
 * How many timeline items are drawn at first, and added each time the
 * reader scrolls to the top (or asks for earlier ones): a session of
 * 10,000 messages opens on its latest turns at once, and its history is
 * drawn as far back as the reader goes, never all of it up front. The
 * items of older pages of turns (read as the reader goes back past the
 * loaded ones) are drawn a window at a time too.
 */
export const TIMELINE_WINDOW = 150;

export function Timeline(props: TimelineProps) {
  const { t } = useT();
  const { s, onLoadOlder } = props;
  const ref = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const [limit, setLimit] = useState(TIMELINE_WINDOW);
  // Set when what is above the reader's view changes (earlier items drawn,
  // an older page merged, the control at the top changing, items leaving
  // the window): the item they were reading, and where it was, so that it
  // is put back there, whatever came or went above it.
  const anchor = useRef<Anchor | undefined>(undefined);
  const start = Math.max(0, s.timeline.length - limit);
  const shown = start > 0 ? s.timeline.slice(start) : s.timeline;
  // What is drawn at the top. This runs before the change reaches the
  // page, so the anchor is measured where the reader sees it now.
  const head = `${start}\n${shown[0]?.type}:${shown[0]?.id}\n${s.history.next ?? ''}\n${s.history.loading}\n${s.history.error ?? ''}`;
  const lastHead = useRef(head);
  if (lastHead.current !== head) {
    lastHead.current = head;
    const el = ref.current;
    // A reader at the bottom stays there (the effect below keeps them).
    if (el && !stick.current && !anchor.current) anchor.current = firstInView(el);
  }
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const a = anchor.current;
    anchor.current = undefined;
    if (a?.el.isConnected) el.scrollTop += a.el.getBoundingClientRect().top - a.top;
    else if (stick.current) el.scrollTop = el.scrollHeight;
  });
  const older = () => {
    if (!onLoadOlder || !s.history.next || s.history.loading) return;
    // The page's items are drawn as they land, a window of them.
    setLimit((l) => Math.max(l, s.timeline.length) + TIMELINE_WINDOW);
    onLoadOlder();
  };
  const earlier = () => {
    if (start > 0) setLimit((l) => l + TIMELINE_WINDOW);
    else older();
  };
  const onScroll = () => {
    const el = ref.current;
    if (!el) return;
    stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 48;
    // A failed page is read again only when asked (its Try again): no
    // loop of failing reads while the reader stays at the top.
    if (el.scrollTop < 40 && !anchor.current && !s.history.error) earlier();
  };
  const busy = !!activeTurn(s);
  const stalled = stalledTurn(s);
  const [showRewound, setShowRewound] = useState(false);
  const facts = useMemo<TurnFacts>(() => ({ writes: turnWrites(s.toolCalls), next: nextTurns(s) }), [s.toolCalls, s.turnOrder, s.turns]);
  return (
    <div class="timeline" ref={ref} onScroll={onScroll} role="log" aria-live="polite" aria-relevant="additions text" tabIndex={0} aria-label={t('pane.conversation')}>
      {s.timeline.length === 0 && s.phase === 'ready' && <p class="timeline__empty">{t('pane.empty')}</p>}
      <TimelineHead hidden={start} history={s.history} onEarlier={earlier} onOlder={onLoadOlder && older} />
      {withRewound(
        s,
        shown.filter((item) => !queuedHere(s, item)),
        showRewound,
        () => setShowRewound(!showRewound),
        (item) => <Item key={`${item.type}:${item.id}`} item={item} facts={facts} {...props} />,
      )}
      {/* What this tab queued waits below what runs, in the order it will run. */}
      {shown.map((item) => (queuedHere(s, item) ? <Item key={`${item.type}:${item.id}`} item={item} facts={facts} {...props} /> : null))}
      {props.onWithdrawTurn && <QueuedPrompts s={s} onWithdraw={props.onWithdrawTurn} />}
      {stalled && <StallNotice turn={stalled} budget={s.budget} cancelling={s.cancelling} onCancel={props.onCancelTurn} />}
      {busy && (
        <div class="typing" aria-label={t('composer.working')} role="status">
          <span />
          <span />
          <span />
        </div>
      )}
    </div>
  );
}

/** An item of the timeline and where it was on the screen. */
interface Anchor {
  el: Element;
  top: number;
}

/** The first item (not the control at the top) the reader sees in the timeline el. */
function firstInView(el: HTMLElement): Anchor | undefined {
  const top = el.getBoundingClientRect().top;
  for (const c of Array.from(el.children)) {
    if (c instanceof HTMLElement && c.dataset['head'] !== undefined) continue;
    const r = c.getBoundingClientRect();
    if (r.bottom > top) return { el: c, top: r.top };
  }
  return undefined;
}

/** The running turn when its agent has gone silent (turn.stalled), even with prompts queued behind it. */
function stalledTurn(s: SessionViewState): TurnView | undefined {
  for (let i = s.turnOrder.length - 1; i >= 0; i--) {
    const t = s.turns[s.turnOrder[i]!];
    if (t?.state === 'running') return t.stalledAt ? t : undefined;
  }
  return undefined;
}

/**
 * The agent's plan above the conversation: open while its turn works on it,
 * folded once the turn ends with steps left (what was not done stays one
 * click away), and gone once every step is done: a finished plan pinned
 * for the rest of the session only took room.
 */
export function PlanView({ plan, running }: { plan: PlanEntry[]; running: boolean }) {
  const { t } = useT();
  const done = plan.filter((e) => e.status === 'completed').length;
  if (plan.length === 0 || (done === plan.length && !running)) return null;
  return (
    <details class="plan" data-testid="plan" open={running && done < plan.length}>
      <summary>
        {t('plan.title')}{' '}
        <span class="plan__count">
          {done}/{plan.length}
        </span>
      </summary>
      <ol>
        {plan.map((e, i) => (
          <li key={i} class={`plan__entry plan__entry--${e.status}`}>
            <span class="plan__mark" aria-hidden="true">
              {e.status === 'completed' ? '✓' : e.status === 'in_progress' ? '◐' : '○'}
            </span>
            <span class="plan__text">{e.content}</span>
            {e.priority && <span class={`plan__prio plan__prio--${e.priority}`}>{e.priority}</span>}
          </li>
        ))}
      </ol>
    </details>
  );
}

/**
 * tetherd names the turns it continues by itself (autoContinue) with this
 * prefix: the transcript says which continuations nobody clicked.
 */
export function isAutoContinuation(promptId: string): boolean {
  return promptId.startsWith('auto-continue:');
}
