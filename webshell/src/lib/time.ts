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
