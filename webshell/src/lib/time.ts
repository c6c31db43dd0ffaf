// Relative times ("5 minutes ago") in the user's language, for the session
// list: when a session last did something.

const units: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['week', 7 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
];

/** iso relative to now, as lang says it ("3 minutes ago", "just now"); "" for no time. */
export function ago(iso: string | undefined, lang: string, now = Date.now()): string {
  if (!iso) return '';
  const secs = Math.round((new Date(iso).getTime() - now) / 1000);
  if (Number.isNaN(secs)) return '';
  const fmt = new Intl.RelativeTimeFormat(lang, { numeric: 'auto', style: 'narrow' });
  for (const [unit, size] of units) {
    if (Math.abs(secs) >= size) return fmt.format(Math.trunc(secs / size), unit);
  }
  return fmt.format(0, 'second');
}

/**
 * A length of time as lang says it, short and whole: "12 sec", "5 min",
 * "2 hr" ("12秒", "5分钟", "2小时"); seconds under a minute, minutes under
 * an hour, hours from there (rounded down: it has been at least that long).
 */
export function duration(ms: number, lang: string): string {
  const secs = Math.max(0, Math.floor(ms / 1000));
  const [n, unit] = secs < 60 ? [secs, 'second'] : secs < 3600 ? [Math.floor(secs / 60), 'minute'] : [Math.floor(secs / 3600), 'hour'];
  return new Intl.NumberFormat(lang === 'zh' ? 'zh-CN' : 'en-US', { style: 'unit', unit, unitDisplay: 'short' }).format(n);
}
