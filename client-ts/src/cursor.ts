/**
 * Cursors are `<epoch>:<seq>`: the epoch names one history of a stream (it
 * changes only when that history is rewritten or lost), the number counts
 * events in it (per-session seq, or the global id on GET /events).
 */
export interface ParsedCursor {
  epoch: string;
  seq: number;
}

/** Parses `<epoch>:<seq>`; undefined when malformed. */
export function parseCursor(cursor: string | undefined | null): ParsedCursor | undefined {
  if (!cursor) return undefined;
  const i = cursor.lastIndexOf(':');
  if (i <= 0 || i === cursor.length - 1) return undefined;
  const digits = cursor.slice(i + 1);
  if (!/^[0-9]+$/.test(digits)) return undefined;
  const seq = Number(digits);
  if (!Number.isSafeInteger(seq)) return undefined;
  return { epoch: cursor.slice(0, i), seq };
}

/** Formats a cursor. */
export function formatCursor(c: ParsedCursor): string {
  return `${c.epoch}:${c.seq}`;
}

/**
 * Compares two cursors of the same epoch: negative if a is before b, 0 if
 * equal, positive if after; undefined if either is malformed or the epochs
 * differ (they are not comparable).
 */
export function compareCursors(a: string, b: string): number | undefined {
  const x = parseCursor(a);
  const y = parseCursor(b);
  if (!x || !y || x.epoch !== y.epoch) return undefined;
  return x.seq - y.seq;
}

/**
 * The earliest of several cursors of one stream (undefined if there are
 * none, or if any is malformed or of another epoch). `listTasks()` and
 * `listSessions()` each return the global cursor they are consistent with;
 * after reading several lists, stream `globalEvents({ cursor })` from the
 * earliest: the events between the lists replay over rows that already
 * hold them, which is harmless because global events carry whole values.
 */
export function earliestCursor(...cursors: (string | undefined)[]): string | undefined {
  let out: string | undefined;
  for (const c of cursors) {
    if (c === undefined) return undefined;
    if (out === undefined) {
      if (!parseCursor(c)) return undefined;
      out = c;
      continue;
    }
    const d = compareCursors(c, out);
    if (d === undefined) return undefined;
    if (d < 0) out = c;
  }
  return out;
}
