// How usage numbers read: token counts short ("3k", "1.2M") the same in
// every language, so a gauge and a turn line stay narrow; percentages and
// money through Intl in the reader's language.
import type { Usage } from '../state/types';

/** 950 → "950", 3000 → "3k", 1500 → "1.5k", 200000 → "200k", 1234567 → "1.2M". */
export function shortTokens(n: number): string {
  const abs = Math.abs(n);
  const [d, unit] = abs >= 1e9 ? [1e9, 'G'] : abs >= 1e6 ? [1e6, 'M'] : abs >= 1e3 ? [1e3, 'k'] : [1, ''];
  if (d === 1) return String(Math.round(n));
  // One decimal below 100 of a unit (1.5k), none above (150k): short, and
  // still moving while a window fills.
  const v = n / d;
  const text = Math.abs(v) >= 100 ? String(Math.round(v)) : String(Math.round(v * 10) / 10);
  return text + unit;
}

/** The context window when the agent said both halves of it, else undefined. */
export function contextWindow(u: Usage | undefined): { used: number; size: number; ratio: number } | undefined {
  if (!u || typeof u.contextUsed !== 'number' || typeof u.contextSize !== 'number' || u.contextSize <= 0) return undefined;
  const used = Math.max(0, u.contextUsed);
  return { used, size: u.contextSize, ratio: Math.min(1, used / u.contextSize) };
}

const locale = (lang: string) => (lang === 'zh' ? 'zh-CN' : 'en-US');

/** 200000 → "200,000": the exact count, for a tooltip. */
export function fullTokens(n: number, lang: string): string {
  return new Intl.NumberFormat(locale(lang)).format(n);
}

/** 0.015 → "1.5%" (at most one decimal: a gauge moves by tenths of a percent). */
export function percent(ratio: number, lang: string): string {
  return new Intl.NumberFormat(locale(lang), { style: 'percent', maximumFractionDigits: 1 }).format(ratio);
}

/**
 * An amount in its currency: {0.03, USD} → "$0.03". Cents are not enough
 * for a session that cost a fraction of one, so amounts under 1 keep up to
 * four decimals ("$0.0042"). A code Intl does not know is shown as said.
 */
export function money(cost: { amount: number; currency: string }, lang: string): string {
  const small = cost.amount !== 0 && Math.abs(cost.amount) < 1;
  try {
    return new Intl.NumberFormat(locale(lang), { style: 'currency', currency: cost.currency, maximumFractionDigits: small ? 4 : 2 }).format(cost.amount);
  } catch {
    return `${cost.amount} ${cost.currency}`;
  }
}
