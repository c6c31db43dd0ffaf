// `@` mentions in the composer: which path is being typed, which workspace
// entries complete it, and which picked paths a message still names.
import type { WorkspaceEntry } from '../state/types';

/** The `@` mention the caret is in: `@dir/prefix`, from its `@` to the caret. */
export interface MentionQuery {
  /** Index of the `@`. */
  start: number;
  /** The caret. */
  end: number;
  /** The directory listed ("" for the session's directory). */
  dir: string;
  /** What is typed of the name in that directory. */
  prefix: string;
}

/**
 * The mention being typed at caret: an `@` at the start or after
 * whitespace, then no whitespace up to the caret (so an e-mail address is
 * no mention). null when the caret is in none.
 */
export function mentionAt(text: string, caret: number): MentionQuery | null {
  const m = /(?:^|\s)@([^\s@]*)$/.exec(text.slice(0, caret));
  if (!m) return null;
  const token = m[1]!;
  const slash = token.lastIndexOf('/');
  return {
    start: caret - token.length - 1,
    end: caret,
    dir: slash >= 0 ? token.slice(0, slash) : '',
    prefix: slash >= 0 ? token.slice(slash + 1) : token,
  };
}

/**
 * The entries that complete prefix: names that start with it, then those
 * that contain it, case-insensitive; dot-files only once a "." is typed.
 */
export function mentionMatches(entries: WorkspaceEntry[], prefix: string, limit = 50): WorkspaceEntry[] {
  const q = prefix.toLowerCase();
  const shown = entries.filter((e) => (e.type === 'file' || e.type === 'dir' || e.type === 'symlink') && (q.startsWith('.') || !e.name.startsWith('.')));
  const starts = shown.filter((e) => e.name.toLowerCase().startsWith(q));
  const contains = shown.filter((e) => !e.name.toLowerCase().startsWith(q) && e.name.toLowerCase().includes(q));
  return [...starts, ...contains].slice(0, limit);
}

/** The text with the mention q replaced by `@path` (a directory keeps its "/" and the caret in it). */
export function completeMention(text: string, q: MentionQuery, entry: WorkspaceEntry): { text: string; caret: number } {
  const insert = entry.type === 'dir' ? `@${entry.path}/` : `@${entry.path} `;
  const rest = text.slice(q.end);
  const sep = entry.type !== 'dir' && rest.startsWith(' ') ? insert.slice(0, -1) : insert;
  return { text: text.slice(0, q.start) + sep + rest, caret: q.start + sep.length };
}

/**
 * The picked paths text still mentions, in order, once each: a path the
 * user picked and then deleted from the message is not sent.
 */
export function mentionedPaths(text: string, picked: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\s)@([^\s@]+)/g)) {
    const p = m[1]!.replace(/[.,;:!?)]+$/, '');
    const path = picked.has(m[1]!) ? m[1]! : p;
    if (picked.has(path) && !out.includes(path)) out.push(path);
  }
  return out;
}
