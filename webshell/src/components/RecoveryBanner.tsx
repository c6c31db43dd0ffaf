import { reasonText, useT, type MessageKey } from '../i18n';
import type { BannerModel, BannerReport } from '../state/banner';
import { Spinner } from './Badges';
import { IconContinue, IconPause, IconWarn } from './Icons';
import { BUDGET_EXCEEDED } from '../state/budget';

export interface RecoveryBannerProps {
  model: BannerModel;
  onContinue: () => void;
  onCheckAgain?: () => void;
  /** Opens the session's budget editor: offered while a budget keeps the turn from continuing. */
  onRaiseBudget?: () => void;
}

/**
 * Above each composer: why the last turn stopped and, when the daemon says
 * it can, one Continue button. Clicking it hides the button at once (the
 * controller moves the continuation to `sending` synchronously).
 */
export function RecoveryBanner({ model, onContinue, onCheckAgain, onRaiseBudget }: RecoveryBannerProps) {
  const { t, lang } = useT();
  if (!model.visible || !model.kind) return null;
  const kind = model.kind;
  // A budget stopped the turn: said as such, not as an interruption's cause.
  const budget = kind !== 'degraded_history' && model.interruptReason === BUDGET_EXCEEDED;
  const overBudget = model.cannotReason === BUDGET_EXCEEDED;
  const tools = model.toolCalls.map((c) => c.title || c.id).filter(Boolean);
  return (
    <section class={`banner banner--${kind}`} aria-label={t('banner.label')} data-testid="recovery-banner" data-kind={kind}>
      <div class="banner__icon" aria-hidden="true">
        {kind === 'degraded_history' ? <IconWarn width="18" height="18" /> : <IconPause width="18" height="18" />}
      </div>
      <div class="banner__body">
        <p class="banner__text">
          {budget ? t('budget.banner') : t(`banner.${kind}`)}
          {model.interruptReason && kind !== 'degraded_history' && !budget && <> {t('banner.reason', { reason: reasonText(lang, model.interruptReason) })}</>}
        </p>
        {tools.length > 0 && (
          <p class="banner__tools" data-testid="banner-tools">
            {t('banner.tools', { tools: tools.join(lang === 'zh' ? '、' : ', ') })}
          </p>
        )}
        {model.report && <ReportView report={model.report} />}
        {model.cannotReason && <p class="banner__note">{overBudget ? t('budget.raiseHint') : t('banner.cannot', { reason: reasonText(lang, model.cannotReason) })}</p>}
        {model.declinedReason && <p class="banner__note">{t('banner.declined', { reason: reasonText(lang, model.declinedReason) })}</p>}
        {model.progress === 'unknown' && (
          <p class="banner__note banner__note--warn" role="alert">
            {t('banner.unknown', { error: model.error ?? '' })}
          </p>
        )}
      </div>
      <div class="banner__actions">
        {overBudget && onRaiseBudget && (
          <button type="button" class="btn" onClick={onRaiseBudget} data-testid="banner-raise-budget">
            {t('budget.raise')}
          </button>
        )}
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

/**
 * The recovery report's gist: what changed in the workspace since the
 * turn began, whether HEAD moved, what finished and what was still
 * running, so the user sees how far the agent got before continuing.
 */
function ReportView({ report }: { report: BannerReport }) {
  const { t, lang } = useT();
  const sep = lang === 'zh' ? '、' : ', ';
  return (
    <div class="banner__report" data-testid="banner-report">
      {report.pending ? (
        <p class="banner__note">{t('banner.report.pending')}</p>
      ) : report.unknown ? (
        <p class="banner__note">{t('banner.report.unknown', { error: report.unknown })}</p>
      ) : report.files.length === 0 ? (
        <p class="banner__note" data-testid="banner-files">{t('banner.report.noFiles')}</p>
      ) : (
        <p class="banner__note" data-testid="banner-files">
          {t('banner.report.files')}{' '}
          {report.files.map((f, i) => (
            <span key={f.path}>
              {i > 0 && sep}
              <code class={`banner__file banner__file--${f.status}`}>{f.path}</code> ({t(`banner.report.status.${f.status}` as MessageKey)})
            </span>
          ))}
          {report.moreFiles > 0 && <> {t('banner.report.more', { n: String(report.moreFiles) })}</>}
        </p>
      )}
      {report.headMoved && <p class="banner__note">{t('banner.report.headMoved')}</p>}
      {report.finished.length > 0 && (
        <p class="banner__note" data-testid="banner-finished">
          {t('banner.report.finished', { tools: report.finished.join(sep) })}
        </p>
      )}
      {report.running.length > 0 && (
        <p class="banner__note banner__note--warn" data-testid="banner-running">
          {t('banner.report.running', { commands: report.running.join(sep) })}
        </p>
      )}
    </div>
  );
}
