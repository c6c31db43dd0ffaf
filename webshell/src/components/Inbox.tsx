// The inbox (docs/inbox.md): what waits for a person across all sessions,
// newest first, behind a button with the count. A permission is answered
// in place ("allow once" primary, as in the pane's card); an interrupted
// turn, or one a budget stopped, is continued in place ("Raise budget"
// opens its session's budget editor first); a stalled turn says how long
// its agent has been silent and can be cancelled; every item opens its
// session. The toggle at the bottom turns the browser notifications on
// (state/inbox-notify.ts).
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import { reasonText, useT, type MessageKey } from '../i18n';
import { ago, duration } from '../lib/time';
import { BUDGET_EXCEEDED, stallSince } from '../state/budget';
import { useNow } from './Budget';
import { inboxCount, INBOX_LIMIT, type InboxState } from '../state/inbox-state';
import type { SessionSummary } from '../state/tasks-state';
import type { InboxItem } from '../state/types';
import { AgentsContext } from './ChatPane';
import { IconClose, IconInbox } from './Icons';
import { primaryOption } from './PermissionCard';
import { sessionName } from './Sidebar';

/** The notification toggle's view of the browser (lib/notify.ts; tests fake it). */
export interface NotifyControls {
  permission(): NotificationPermission | 'unsupported';
  chosen(): boolean;
  /** Asks the browser; resolves with its answer. */
  enable(): Promise<NotificationPermission | 'unsupported'>;
  disable(): void;
}

export function InboxButton({ state, expanded, onClick, testId }: { state: InboxState; expanded: boolean; onClick: () => void; testId: string }) {
  const { t } = useT();
  const count = inboxCount(state);
  const waiting = state.items.length > 0;
  const label = waiting ? t('inbox.button', { n: count }) : t('inbox.buttonNone');
  return (
    <button
      type="button"
      class={`btn btn--ghost inbox-btn${waiting ? ' inbox-btn--waiting' : ''}`}
      aria-label={label}
      title={label}
      aria-haspopup="dialog"
      aria-expanded={expanded}
      onClick={onClick}
      data-testid={testId}
      data-count={state.items.length}
    >
      <IconInbox width="16" height="16" />
      {waiting && (
        <span class="inbox-btn__count" aria-hidden="true" data-testid="inbox-count">
          {count}
        </span>
      )}
    </button>
  );
}

export interface InboxDialogProps {
  state: InboxState;
  notify: NotifyControls;
  onAnswer: (item: InboxItem, optionId: string) => void;
  onContinue: (item: InboxItem) => void;
  /** Cancels a stalled turn. */
  onCancel: (item: InboxItem) => void;
  /** Opens the session with its budget editor. */
  onRaiseBudget: (sessionId: string) => void;
  onOpen: (sessionId: string) => void;
  onClose: () => void;
}

export function InboxDialog({ state, notify, onAnswer, onContinue, onCancel, onRaiseBudget, onOpen, onClose }: InboxDialogProps) {
  const { t } = useT();
  const box = useRef<HTMLDivElement>(null);
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    const prev = document.activeElement as HTMLElement | null;
    box.current?.focus();
    // On the document: an answered item leaves with the button that had
    // the focus, and Esc must still close the inbox.
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.defaultPrevented) return;
      e.preventDefault();
      close.current();
    };
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('keydown', onKey);
      prev?.focus?.();
    };
  }, []);
  useEffect(() => {
    // The focus left with an item: keep it in the dialog.
    if (!box.current?.contains(document.activeElement)) box.current?.focus();
  }, [state.items]);
  return (
    <div class="modal" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div ref={box} tabIndex={-1} class="modal__box inbox" role="dialog" aria-modal="true" aria-labelledby="inbox-title" data-testid="inbox">
        <div class="inbox__top">
          <h2 id="inbox-title">{t('inbox.title')}</h2>
          <button type="button" class="btn btn--ghost btn--icon" aria-label={t('inbox.close')} title={t('inbox.close')} onClick={onClose} data-testid="inbox-close">
            <IconClose />
          </button>
        </div>
        {state.error && (
          <p class="notice notice--error" role="alert">
            {t('inbox.error', { error: state.error })}
          </p>
        )}
        {!state.loaded && !state.error && <p class="muted">{t('inbox.loading')}</p>}
        {state.loaded && state.items.length === 0 && (
          <p class="muted inbox__empty" data-testid="inbox-empty">
            {t('inbox.empty')}
          </p>
        )}
        {state.items.length > 0 && (
          <ul class="inbox__list" aria-label={t('inbox.items')}>
            {state.items.map((item) => (
              <Item
                key={item.id}
                item={item}
                busy={!!state.busy[item.id]}
                failed={state.failed[item.id]}
                onAnswer={onAnswer}
                onContinue={onContinue}
                onCancel={onCancel}
                onRaiseBudget={(id) => (onRaiseBudget(id), onClose())}
                onOpen={(id) => (onOpen(id), onClose())}
              />
            ))}
          </ul>
        )}
        {state.more && <p class="muted inbox__more">{t('inbox.more', { n: INBOX_LIMIT })}</p>}
        <NotifyToggle notify={notify} />
      </div>
    </div>
  );
}

const tone: Record<InboxItem['kind'], string> = {
  permission: 'info',
  interrupted_turn: 'warn',
  failed_turn: 'bad',
  budget_exceeded: 'bad',
  stalled_turn: 'warn',
  needs_credentials: 'bad',
};

function Item({
  item,
  busy,
  failed,
  onAnswer,
  onContinue,
  onCancel,
  onRaiseBudget,
  onOpen,
}: {
  item: InboxItem;
  busy: boolean;
  failed?: string;
  onAnswer: (item: InboxItem, optionId: string) => void;
  onContinue: (item: InboxItem) => void;
  onCancel: (item: InboxItem) => void;
  onRaiseBudget: (sessionId: string) => void;
  onOpen: (sessionId: string) => void;
}) {
  const { t, lang } = useT();
  const agents = useContext(AgentsContext);
  const s = item.session;
  const name = sessionName(s as SessionSummary, agents[s.agentProfileId]?.displayName);
  const kind = t(`inbox.kind.${item.kind}` as MessageKey);
  const when = ago(item.at, lang);
  const p = item.permission;
  const primary = p ? primaryOption(p) : undefined;
  return (
    <li class="inbox__item" aria-label={t('inbox.itemLabel', { kind, name })} data-testid="inbox-item" data-kind={item.kind} data-item-id={item.id} data-session-id={s.id}>
      <div class="inbox__head">
        <span class={`badge badge--small badge--${tone[item.kind]}`}>{kind}</span>
        <span class="inbox__name">{name}</span>
        {when && (
          <time class="inbox__time" dateTime={item.at} title={item.at}>
            {when}
          </time>
        )}
      </div>
      <p class="inbox__what" data-testid="inbox-what">
        {item.kind === 'stalled_turn' ? <Silent item={item} /> : describe(item, t, lang)}
      </p>
      <div class="inbox__actions">
        {p?.options.map((o) => (
          <button
            type="button"
            key={o.optionId}
            class={`btn btn--small${o.optionId === primary ? ' btn--primary' : ''}`}
            disabled={busy}
            onClick={() => onAnswer(item, o.optionId)}
            data-option-kind={o.kind}
            data-primary={o.optionId === primary ? 'true' : undefined}
            data-testid="inbox-option"
          >
            {o.name}
          </button>
        ))}
        {item.kind === 'budget_exceeded' && (
          <button type="button" class="btn btn--small" onClick={() => onRaiseBudget(s.id)} aria-label={t('budget.raiseLabel', { name })} data-testid="inbox-raise-budget">
            {t('budget.raise')}
          </button>
        )}
        {(item.kind === 'interrupted_turn' || item.kind === 'budget_exceeded') && (
          <button
            type="button"
            class="btn btn--small btn--primary"
            disabled={busy}
            onClick={() => onContinue(item)}
            aria-label={t(item.kind === 'budget_exceeded' ? 'inbox.continueBudgetLabel' : 'inbox.continueLabel', { name })}
            data-testid="inbox-continue"
          >
            {t('inbox.continue')}
          </button>
        )}
        {item.kind === 'stalled_turn' && (
          <button type="button" class="btn btn--small" disabled={busy} onClick={() => onCancel(item)} aria-label={t('inbox.cancelLabel', { name })} data-testid="inbox-cancel">
            {t('budget.cancelTurn')}
          </button>
        )}
        <button type="button" class="btn btn--small" onClick={() => onOpen(s.id)} aria-label={t('inbox.openLabel', { name })} title={t('inbox.openLabel', { name })} data-testid="inbox-open">
          {t('inbox.open')}
        </button>
      </div>
      {failed && (
        <p class="notice notice--error inbox__failed" role="alert">
          {t('inbox.actionFailed', { error: failed === BUDGET_EXCEEDED ? t('budget.stillOver') : failed })}
        </p>
      )}
    </li>
  );
}

/** What the item is about, in a sentence. */
function describe(item: InboxItem, t: ReturnType<typeof useT>['t'], lang: ReturnType<typeof useT>['lang']): string {
  switch (item.kind) {
    case 'permission':
      return item.permission?.title || t('perm.title');
    case 'interrupted_turn': {
      const reason = reasonText(lang, item.turn?.interruptReason);
      return reason ? t('inbox.interrupted', { reason }) : t('inbox.interruptedPlain');
    }
    case 'failed_turn':
      return t('inbox.failed', { error: item.turn?.error?.message || item.turn?.error?.code || '' });
    case 'needs_credentials': {
      const msg = item.session.executor?.errorMessage;
      return msg ? t('inbox.credentials', { error: msg }) : t('inbox.credentialsNone');
    }
    case 'budget_exceeded': {
      const msg = item.turn?.error?.message;
      return msg ? t('inbox.budget', { error: msg }) : t('inbox.budgetPlain');
    }
    case 'stalled_turn':
      return ''; // <Silent>: it counts
  }
}

/** "No output from the agent for 5 min": since its agent was last heard from, counting. */
function Silent({ item }: { item: InboxItem }) {
  const { t, lang } = useT();
  const now = useNow(5000);
  const since = stallSince({ stalledAt: item.turn?.stalledAt ?? item.at }, item.session.budget) ?? now;
  return <>{t('budget.silent', { duration: duration(now - since, lang) })}</>;
}

/** "Notify me when the tab is hidden": on asks the browser first. */
function NotifyToggle({ notify }: { notify: NotifyControls }) {
  const { t } = useT();
  const [perm, setPerm] = useState(notify.permission());
  const [on, setOn] = useState(() => notify.chosen() && perm === 'granted');
  const unsupported = perm === 'unsupported';
  const change = async (want: boolean) => {
    if (!want) {
      notify.disable();
      setOn(false);
      return;
    }
    const p = await notify.enable();
    setPerm(p);
    setOn(p === 'granted');
  };
  return (
    <div class="inbox__notify">
      <label class="check">
        <input type="checkbox" checked={on} disabled={unsupported} onChange={(e) => void change((e.currentTarget as HTMLInputElement).checked)} aria-describedby="inbox-notify-hint" data-testid="inbox-notify" />
        <span>{t('inbox.notify')}</span>
      </label>
      <p class="muted inbox__hint" id="inbox-notify-hint">
        {unsupported ? t('inbox.notifyUnsupported') : perm === 'denied' ? t('inbox.notifyDenied') : t('inbox.notifyHint')}
      </p>
    </div>
  );
}
