import { useT } from '../i18n';
import type { AuthMethod } from '../state/types';
import { Spinner } from './Badges';
import { IconWarn } from './Icons';

/** The stable code of an agent that needs credentials (ACP -32000). */
export const AGENT_AUTH_REQUIRED = 'agent_auth_required';

export interface AuthBannerProps {
  /** The daemon's message: what to set in the profile or which command to run. */
  message?: string;
  /** The methods the agent announced, each with the daemon's hint. */
  methods: AuthMethod[];
  profileId?: string;
  retrying?: boolean;
  onRetry: () => void;
}

/**
 * The auth methods an agent announced, each with the daemon's hint of what
 * to do; nothing when it announced none.
 */
export function AuthMethodList({ methods }: { methods: AuthMethod[] }) {
  const { t } = useT();
  if (methods.length === 0) return null;
  return (
    <>
      <p class="banner__note">{t('auth.methods')}</p>
      <ul class="banner__methods" data-testid="auth-methods">
        {methods.map((m) => (
          <li key={m.id} data-method-id={m.id}>
            <span class="banner__method">{m.name || m.id}</span>
            {m.description && <span class="muted"> — {m.description}</span>}
            {m.hint && <div class="banner__hint mono">{m.hint}</div>}
          </li>
        ))}
      </ul>
    </>
  );
}

/**
 * Shown on a session whose agent refused to work without credentials
 * (`agent_auth_required`): not a generic failure but what to do about it,
 * with the agent's auth methods, and a retry once the profile is fixed.
 */
export function AuthBanner({ message, methods, profileId, retrying, onRetry }: AuthBannerProps) {
  const { t } = useT();
  return (
    <section class="banner banner--auth" role="alert" aria-label={t('auth.label')} data-testid="auth-banner">
      <div class="banner__icon" aria-hidden="true">
        <IconWarn width="18" height="18" />
      </div>
      <div class="banner__body">
        <p class="banner__text">
          <strong>{t('auth.title')}</strong>
        </p>
        {message && (
          <p class="banner__note" data-testid="auth-message">
            {message}
          </p>
        )}
        <AuthMethodList methods={methods} />
        <p class="banner__note">{t('auth.hint', { profile: profileId ?? '' })}</p>
      </div>
      <div class="banner__actions">
        <button type="button" class="btn" onClick={onRetry} disabled={retrying} data-testid="auth-retry">
          {retrying ? (
            <>
              <Spinner /> {t('pane.resuming')}
            </>
          ) : (
            t('auth.retry')
          )}
        </button>
      </div>
    </section>
  );
}
