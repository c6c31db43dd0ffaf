import { useT, type MessageKey, type T } from '../i18n';
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

const execStates = new Set(['starting', 'ready', 'reconnecting', 'error', 'stopped']);

const execTone: Record<string, string> = { ready: 'ok', error: 'bad', starting: 'info', reconnecting: 'warn' };

/** The host a reconnecting session waits for, in words. */
function hostPhrase(t: T, runtime: string | undefined, host: string | undefined): string {
  if (runtime === 'remote' && host) return t('exec.remoteHost', { host });
  return t('exec.localHost');
}

/**
 * Where the agent runs (runtime, and the host's name for a remote one),
 * with what that means for a restart of tetherd in the tooltip.
 */
export function ExecutorWhere({ runtime, host }: { runtime?: string; host?: string }) {
  const { t } = useT();
  if (runtime !== 'standalone' && runtime !== 'detached' && runtime !== 'remote') return null;
  const label = t(`exec.where.${runtime}` as MessageKey, { host: host ?? '' }).trim();
  const hint = t(`exec.whereHint.${runtime}` as MessageKey, { host: host ?? '' });
  return (
    <span class="badge badge--outline" data-testid="executor-where" data-runtime={runtime} aria-label={t('exec.where', { where: label })} title={hint}>
      {label}
    </span>
  );
}

/**
 * The agent's status. `reconnecting` is neither an error nor a stop: the
 * daemon lost its executor host (its own restart, a network cut) and the
 * turn goes on there, so it spins in amber and says so in its tooltip.
 */
export function ExecutorBadge({
  status,
  error,
  resuming,
  runtime,
  host,
  onRetry,
}: {
  status?: string;
  error?: string;
  resuming?: boolean;
  runtime?: string;
  host?: string;
  onRetry?: () => void;
}) {
  const { t } = useT();
  const s = resuming ? 'starting' : status;
  const key = (s && execStates.has(s) ? `exec.${s}` : 'exec.unknown') as MessageKey;
  const tone = (s && execTone[s]) ?? 'neutral';
  // While it starts or reconnects, an error is why its host cannot be
  // reached yet (the daemon keeps trying): said as a wait, not a failure.
  const waiting = (s === 'starting' || s === 'reconnecting') && error ? t('exec.waitingHint', { host: hostPhrase(t, runtime, host), error }) : undefined;
  const title =
    s === 'error' && error
      ? error
      : s === 'reconnecting'
        ? [t('exec.reconnectingHint', { host: hostPhrase(t, runtime, host) }), waiting].filter(Boolean).join('\n')
        : waiting;
  return (
    <span class="exec" data-testid="executor" data-exec={s ?? 'unknown'} data-runtime={runtime} data-host={host}>
      <span class={`badge badge--${tone}`} aria-label={t('exec.label', { state: t(key) })} title={title}>
        {s === 'starting' || s === 'reconnecting' ? <Spinner /> : <span class={`dot dot--${tone}`} aria-hidden="true" />}
        {t(key)}
      </span>
      <ExecutorWhere runtime={runtime} host={host} />
      {s === 'error' && onRetry && (
        <button type="button" class="btn btn--small" onClick={onRetry} aria-label={`${t('exec.error')}: ${t('exec.retry')}`}>
          {t('exec.retry')}
        </button>
      )}
    </span>
  );
}

/**
 * Whether the agent runs in its sandbox (docs/security.md): a quiet badge
 * when it does, an amber one when it does not, with why in its tooltip.
 */
export function SandboxBadge({ sandbox }: { sandbox?: { state: 'on' | 'off'; reason?: string; network?: string } }) {
  const { t } = useT();
  if (!sandbox) return null;
  const on = sandbox.state === 'on';
  const title = on
    ? t('sandbox.onHint', { network: sandbox.network ?? 'all' })
    : t('sandbox.offHint', { reason: sandbox.reason ?? '' });
  return (
    <span
      class={`badge ${on ? 'badge--outline' : 'badge--warn'}`}
      data-testid="sandbox"
      data-sandbox={sandbox.state}
      aria-label={title}
      title={title}
    >
      {t(on ? 'sandbox.on' : 'sandbox.off')}
    </span>
  );
}
