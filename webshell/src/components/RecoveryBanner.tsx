import { reasonText, useT } from '../i18n';
import type { BannerModel } from '../state/banner';
import { Spinner } from './Badges';
import { IconContinue, IconPause, IconWarn } from './Icons';

export interface RecoveryBannerProps {
  model: BannerModel;
  onContinue: () => void;
  onCheckAgain?: () => void;
}

/**
 * Above each composer: why the last turn stopped and, when the daemon says
 * it can, one Continue button. Clicking it hides the button at once (the
 * controller moves the continuation to `sending` synchronously).
 */
export function RecoveryBanner({ model, onContinue, onCheckAgain }: RecoveryBannerProps) {
  const { t, lang } = useT();
  if (!model.visible || !model.kind) return null;
  const kind = model.kind;
  const tools = model.toolCalls.map((c) => c.title || c.id).filter(Boolean);
  return (
    <section class={`banner banner--${kind}`} aria-label={t('banner.label')} data-testid="recovery-banner" data-kind={kind}>
      <div class="banner__icon" aria-hidden="true">
        {kind === 'degraded_history' ? <IconWarn width="18" height="18" /> : <IconPause width="18" height="18" />}
      </div>
      <div class="banner__body">
        <p class="banner__text">
          {t(`banner.${kind}`)}
          {model.interruptReason && kind !== 'degraded_history' && <> {t('banner.reason', { reason: reasonText(lang, model.interruptReason) })}</>}
        </p>
        {tools.length > 0 && (
          <p class="banner__tools" data-testid="banner-tools">
            {t('banner.tools', { tools: tools.join(lang === 'zh' ? '、' : ', ') })}
          </p>
        )}
        {model.cannotReason && <p class="banner__note">{t('banner.cannot', { reason: reasonText(lang, model.cannotReason) })}</p>}
        {model.declinedReason && <p class="banner__note">{t('banner.declined', { reason: reasonText(lang, model.declinedReason) })}</p>}
        {model.progress === 'unknown' && (
          <p class="banner__note banner__note--warn" role="alert">
            {t('banner.unknown', { error: model.error ?? '' })}
          </p>
        )}
      </div>
      <div class="banner__actions">
        {model.showContinue && (
          <button type="button" class="btn btn--primary" onClick={onContinue} aria-label={t('banner.continueLabel')} data-testid="continue">
            <IconContinue /> {t('banner.continue')}
          </button>
        )}
        {(model.progress === 'sending' || model.progress === 'accepted' || model.progress === 'refreshing') && (
          <span class="banner__progress" role="status">
            <Spinner /> {model.progress === 'refreshing' ? t('banner.refreshing') : t('banner.sending')}
          </span>
        )}
        {model.progress === 'unknown' && onCheckAgain && (
          <button type="button" class="btn" onClick={onCheckAgain}>
            {t('banner.checkAgain')}
          </button>
        )}
      </div>
    </section>
  );
}
