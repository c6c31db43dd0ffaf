// Budgets and the stall watchdog in a pane (docs/inbox.md, "Budgets"): a
// Budget button among the pane's badges with how much of the token and
// cost budget is used beside it, the compact editor it opens (PATCH
// /session/{id}), and the notice of a running turn whose agent has gone
// silent, with its Cancel.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useT, type MessageKey } from '../i18n';
import { duration } from '../lib/time';
import { money, percent, shortTokens, fullTokens } from '../lib/usage';
import { budgetForm, budgetOfForm, costUse, stallSince, tokenUse, type BudgetForm, type BudgetUse } from '../state/budget';
import type { TurnView } from '../state/session-state';
import type { Budget, Usage } from '../state/types';
import '../budget.css';

/** Now, again every `ms` while mounted: for "for 12 sec" that keeps counting. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const id = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(id);
  }, [ms]);
  return now;
}

/** One limit's use as a meter: the bar says what the text says, amber from 80 %, red at it. */
function UseMeter({ u, label, value, text, testId }: { u: BudgetUse; label: string; value: string; text: string; testId: string }) {
  return (
    <span
      class={`budget__use budget__use--${u.level}`}
      role="meter"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={u.max}
      // A meter's value stays in its range; the text says how far past it.
      aria-valuenow={Math.min(u.used, u.max)}
      aria-valuetext={value}
      title={value}
      data-testid={testId}
      data-level={u.level}
    >
      <span class="budget__bar" aria-hidden="true">
        <span class="budget__fill" style={{ width: `${(Math.min(1, u.ratio) * 100).toFixed(2)}%` }} />
      </span>
      <span class="budget__text">{text}</span>
    </span>
  );
}

/**
 * The Budget button (it opens the editor; none on a read-only session)
 * and, when the session has a token or cost budget, how much of each its
 * usage has taken.
 */
export function BudgetGauge({ budget, usage, open, onToggle, editorId }: { budget?: Budget; usage?: Usage; open: boolean; onToggle?: () => void; editorId: string }) {
  const { t, lang } = useT();
  const tok = tokenUse(budget, usage);
  const cost = costUse(budget, usage);
  const pct = (u: BudgetUse) => percent(u.ratio, lang);
  const inCurrency = (amount: number) => money({ amount, currency: cost?.currency ?? 'USD' }, lang);
  if (!onToggle && !tok && !cost) return null;
  return (
    <div class="budget" data-testid="budget">
      {onToggle && (
        <button
          type="button"
          class={`btn btn--ghost btn--small budget__toggle${open ? ' btn--on' : ''}`}
          aria-expanded={open}
          aria-controls={open ? editorId : undefined}
          title={t('budget.toggleHint')}
          onClick={onToggle}
          data-testid="budget-toggle"
        >
          {t('budget.toggle')}
        </button>
      )}
      {tok && (
        <UseMeter
          u={tok}
          label={t('budget.tokensLabel')}
          value={t('budget.tokensValue', { used: fullTokens(tok.used, lang), max: fullTokens(tok.max, lang), percent: pct(tok) })}
          text={t('budget.tokensUse', { used: shortTokens(tok.used), max: shortTokens(tok.max) })}
          testId="budget-tokens"
        />
      )}
      {cost && (
        <UseMeter
          u={cost}
          label={t('budget.costLabel')}
          value={t('budget.costValue', { used: inCurrency(cost.used), max: inCurrency(cost.max), percent: pct(cost) })}
          text={t('budget.costUse', { used: inCurrency(cost.used), max: inCurrency(cost.max) })}
          testId="budget-cost"
        />
      )}
    </div>
  );
}

export interface BudgetEditorProps {
  id: string;
  budget?: Budget;
  /** Saves the budget, whole; resolves undefined when saved, else why not. */
  onSave: (b: Budget) => Promise<string | undefined>;
  onClose: () => void;
}

const fieldKey: Record<'tokens' | 'cost' | 'turn' | 'stall', MessageKey> = { tokens: 'budget.maxTokens', cost: 'budget.maxCost', turn: 'budget.maxTurn', stall: 'budget.stall' };

/**
 * The session's budget as a small form: max tokens, max cost, max time
 * per turn (minutes or seconds) and the stall limit; an empty field sets
 * no limit. Saving PATCHes the session and closes the form; the daemon's
 * refusal (a 400's detail) stays shown in it.
 */
export function BudgetEditor({ id, budget, onSave, onClose }: BudgetEditorProps) {
  const { t } = useT();
  const [form, setForm] = useState<BudgetForm>(() => budgetForm(budget));
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);
  const currency = budget?.maxCost?.currency ?? 'USD';
  const set = (k: keyof BudgetForm) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement | HTMLSelectElement).value });
  const save = async (b: Budget) => {
    setSaving(true);
    setError(undefined);
    const err = await onSave(b);
    setSaving(false);
    if (err === undefined) onClose();
    else setError(t('budget.failed', { error: err }));
  };
  const submit = (e: Event) => {
    e.preventDefault();
    const r = budgetOfForm(form, currency);
    if ('invalid' in r) setError(t('budget.notNumber', { field: t(fieldKey[r.invalid], { currency }) }));
    else void save(r.budget);
  };
  const input = (k: 'tokens' | 'cost' | 'turn' | 'stall', step: string, inputId?: string) => (
    <input
      id={inputId}
      ref={k === 'tokens' ? first : undefined}
      type="number"
      inputMode={step === '1' ? 'numeric' : 'decimal'}
      min="0"
      step={step}
      value={form[k]}
      placeholder={t('budget.none')}
      onInput={set(k)}
      data-testid={`budget-input-${k}`}
    />
  );
  return (
    // noValidate: what a value may be is the daemon's to say, in its words.
    <form id={id} class="budget-editor" aria-labelledby={`${id}-title`} noValidate onSubmit={submit} onKeyDown={(e) => e.key === 'Escape' && (e.preventDefault(), onClose())} data-testid="budget-editor">
      <h3 id={`${id}-title`}>{t('budget.title')}</h3>
      <div class="budget-editor__fields">
        <label class="budget-editor__field">
          <span>{t('budget.maxTokens')}</span>
          {input('tokens', '1')}
        </label>
        <label class="budget-editor__field">
          <span>{t('budget.maxCost', { currency })}</span>
          {input('cost', '0.01')}
        </label>
        <div class="budget-editor__field">
          <label for={`${id}-turn`}>{t('budget.maxTurn')}</label>
          <span class="budget-editor__pair">
            {input('turn', 'any', `${id}-turn`)}
            <select value={form.turnUnit} onChange={set('turnUnit')} aria-label={t('budget.turnUnit')} data-testid="budget-turn-unit">
              <option value="minutes">{t('budget.unit.minutes')}</option>
              <option value="seconds">{t('budget.unit.seconds')}</option>
            </select>
          </span>
        </div>
        <label class="budget-editor__field">
          <span>{t('budget.stall')}</span>
          {input('stall', '1')}
        </label>
      </div>
      <p class="field__hint">{t('budget.hint')}</p>
      {error && (
        <p class="notice notice--error" role="alert" data-testid="budget-error">
          {error}
        </p>
      )}
      <div class="budget-editor__actions">
        <button type="submit" class="btn btn--primary btn--small" disabled={saving} data-testid="budget-save">
          {saving ? t('budget.saving') : t('budget.save')}
        </button>
        <button type="button" class="btn btn--small" disabled={saving} onClick={() => void save({})} data-testid="budget-clear">
          {t('budget.clear')}
        </button>
        <button type="button" class="btn btn--ghost btn--small" onClick={onClose} data-testid="budget-close">
          {t('budget.close')}
        </button>
      </div>
    </form>
  );
}

/**
 * A running turn whose agent has said nothing for the session's
 * stallSeconds: how long, counting, and a Cancel. It goes with the stall
 * (turn.stall_ended) or the turn's end.
 */
export function StallNotice({ turn, budget, cancelling, onCancel }: { turn: TurnView; budget?: Budget; cancelling: boolean; onCancel?: () => void }) {
  const { t, lang } = useT();
  const now = useNow(1000);
  const since = stallSince(turn, budget);
  if (since === undefined) return null;
  const at = Date.parse(turn.stalledAt ?? '');
  return (
    // In the conversation's log, which reads out what is added: the count
    // that goes on is for the eye, the reader hears the stall as it began.
    <div class="notice notice--warn stall" data-testid="stall-notice" data-prompt-id={turn.promptId}>
      <span aria-hidden="true" data-testid="stall-silent">
        {t('budget.silent', { duration: duration(now - since, lang) })}
      </span>
      <span class="sr-only">{t('budget.silent', { duration: duration((Number.isNaN(at) ? now : at) - since, lang) })}</span>
      {onCancel && (
        <button type="button" class="btn btn--small" disabled={cancelling} onClick={onCancel} data-testid="stall-cancel">
          {cancelling ? t('budget.cancelling') : t('budget.cancelTurn')}
        </button>
      )}
    </div>
  );
}
