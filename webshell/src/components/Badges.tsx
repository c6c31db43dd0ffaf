import { useT, type MessageKey } from '../i18n';
import type { StreamState } from '../state/types';

export function Spinner({ label }: { label?: string }) {
  return <span class="spinner" role={label ? 'img' : undefined} aria-label={label} aria-hidden={label ? undefined : 'true'} />;
}

const sessionTone: Record<string, string> = {
  CREATED: 'neutral',
  STARTING: 'info',
  RUNNING: 'info',
  WAITING_FOR_INPUT: 'ok',
  COMPLETED: 'neutral',
  FAILED: 'bad',
  CANCELLED: 'neutral',
};

export function SessionStateBadge({ state }: { state?: string }) {
  const { t } = useT();
  if (!state) return null;
  const key = `state.${state}` as MessageKey;
  return (
    <span class={`badge badge--${sessionTone[state] ?? 'neutral'}`} data-testid="session-state" data-state={state}>
      {state === 'RUNNING' && <span class="dot dot--pulse" aria-hidden="true" />}
      {t(key) ?? state}
    </span>
  );
}

const taskTone: Record<string, string> = {
  TODO: 'neutral',
  IN_PROGRESS: 'info',
  REVIEW: 'ok',
  COMPLETED: 'neutral',
  FAILED: 'bad',
  CANCELLED: 'neutral',
};

export function TaskStateBadge({ state }: { state: string }) {
  const { t } = useT();
  return (
    <span class={`badge badge--small badge--${taskTone[state] ?? 'neutral'}`} data-state={state}>
      {t(`task.${state}` as MessageKey) ?? state}
    </span>
  );
}

export type ConnView = 'open' | 'catching_up' | 'connecting' | 'disconnected' | 'closed';

export function connView(c: StreamState | 'idle', everOpen: boolean, sessionClosed = false): ConnView {
  if (sessionClosed && c !== 'open' && c !== 'catching_up') return 'closed';
  if (c === 'open') return 'open';
  if (c === 'catching_up') return 'catching_up';
  return everOpen || c === 'closed' ? 'disconnected' : 'connecting';
}

export function ConnectionBadge({ view, compact }: { view: ConnView; compact?: boolean }) {
  const { t } = useT();
  const label = t(`conn.${view}` as MessageKey);
  const tone = view === 'open' ? 'ok' : view === 'catching_up' || view === 'connecting' ? 'warn' : view === 'closed' ? 'neutral' : 'bad';
  return (
    <span
      class={`badge badge--${tone}${compact ? ' badge--compact' : ''}`}
      role="status"
      aria-label={t('conn.label', { state: label })}
      data-testid="connection"
      data-conn={view}
      title={t('conn.label', { state: label })}
    >
      {view === 'catching_up' || view === 'connecting' ? <Spinner /> : <span class={`dot dot--${tone}`} aria-hidden="true" />}
      {!compact && label}
    </span>
  );
}

export function ExecutorBadge({
  status,
  error,
  resuming,
  onRetry,
}: {
  status?: string;
  error?: string;
  resuming?: boolean;
  onRetry?: () => void;
}) {
  const { t } = useT();
  const s = resuming ? 'starting' : status;
  const key = (s === 'starting' || s === 'ready' || s === 'error' || s === 'stopped' ? `exec.${s}` : 'exec.unknown') as MessageKey;
  const tone = s === 'ready' ? 'ok' : s === 'error' ? 'bad' : s === 'starting' ? 'info' : 'neutral';
  return (
    <span class="exec" data-testid="executor" data-exec={s ?? 'unknown'}>
      <span class={`badge badge--${tone}`} aria-label={t('exec.label', { state: t(key) })} title={s === 'error' && error ? error : undefined}>
        {s === 'starting' ? <Spinner /> : <span class={`dot dot--${tone}`} aria-hidden="true" />}
        {t(key)}
      </span>
      {s === 'error' && onRetry && (
        <button type="button" class="btn btn--small" onClick={onRetry} aria-label={`${t('exec.error')}: ${t('exec.retry')}`}>
          {t('exec.retry')}
        </button>
      )}
    </span>
  );
}
