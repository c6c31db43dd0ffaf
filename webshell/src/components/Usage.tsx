// What the agent says it used (ACP usage_update, tetherd's usage.updated):
// the pane's context-window gauge and the session's cost, and a quiet
// line under each turn that has usage. Nothing is shown for what the agent
// never said: an agent without usage reports leaves no empty gauge.
import { useT } from '../i18n';
import { contextWindow, fullTokens, money, percent, shortTokens } from '../lib/usage';
import type { Usage } from '../state/types';
import '../usage.css';

/**
 * The context window as a meter ("Context ▮▯▯ 3k / 200k tokens · 1.5%")
 * and the cost so far ("Cost $0.03"), each only when the agent said it.
 */
export function UsageGauge({ usage }: { usage?: Usage }) {
  const { t, lang } = useT();
  const win = contextWindow(usage);
  const cost = usage?.cost;
  if (!win && !cost) return null;
  let gauge = null;
  if (win) {
    const used = shortTokens(win.used);
    const size = shortTokens(win.size);
    const pct = percent(win.ratio, lang);
    // Amber near the end of the window, red at it: the agent will have to
    // compact or drop context soon.
    const level = win.ratio >= 0.95 ? 'full' : win.ratio >= 0.8 ? 'high' : 'ok';
    gauge = (
      <div
        class={`usage__gauge usage__gauge--${level}`}
        role="meter"
        aria-label={t('usage.context')}
        aria-valuemin={0}
        aria-valuemax={win.size}
        aria-valuenow={win.used}
        aria-valuetext={t('usage.contextValue', { used, size, percent: pct })}
        title={t('usage.contextValue', { used: fullTokens(win.used, lang), size: fullTokens(win.size, lang), percent: pct })}
        data-testid="context-gauge"
        data-level={level}
      >
        <span class="usage__key">{t('usage.contextShort')}</span>
        <span class="usage__bar" aria-hidden="true">
          <span class="usage__fill" style={{ width: `${(win.ratio * 100).toFixed(2)}%` }} />
        </span>
        <span class="usage__text">
          {t('usage.contextOf', { used, size })} · {pct}
        </span>
      </div>
    );
  }
  return (
    <div class="usage" data-testid="usage">
      {gauge}
      {cost && (
        <span class="usage__cost" title={t('usage.costHint')} data-testid="usage-cost">
          <span class="usage__key">{t('usage.cost')}</span> {money(cost, lang)}
        </span>
      )}
    </div>
  );
}

/**
 * A turn's usage in one quiet line: "1.2k in · 300 out · context 3k / 200k"
 * (each part only when said; a turn's usage has no cost: the agent reports
 * the session's). Null when the turn has none.
 */
export function TurnUsage({ usage }: { usage?: Usage }) {
  const { t } = useT();
  if (!usage) return null;
  const parts: string[] = [];
  if (typeof usage.inputTokens === 'number') parts.push(t('usage.turnIn', { n: shortTokens(usage.inputTokens) }));
  if (typeof usage.outputTokens === 'number') parts.push(t('usage.turnOut', { n: shortTokens(usage.outputTokens) }));
  if (usage.cachedReadTokens) parts.push(t('usage.turnCached', { n: shortTokens(usage.cachedReadTokens) }));
  // The total only when in and out do not already say it.
  if (typeof usage.totalTokens === 'number' && typeof usage.inputTokens !== 'number' && typeof usage.outputTokens !== 'number')
    parts.push(t('usage.turnTotal', { n: shortTokens(usage.totalTokens) }));
  const win = contextWindow(usage);
  if (win) parts.push(t('usage.turnContext', { used: shortTokens(win.used), size: shortTokens(win.size) }));
  if (parts.length === 0) return null;
  return (
    <span class="turn-usage" title={t('usage.turn')} data-testid="turn-usage">
      {parts.join(' · ')}
    </span>
  );
}
