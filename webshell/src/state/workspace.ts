// The workspace panel's decisions, without UI: whether the panel is
// enabled (it needs the session's executor, never its agent), which
// checkpoints show what one turn changed, and a unified patch split into
// files and lines for display.
import type { SessionStatus } from './types';
import type { SessionViewState, TurnView } from './session-state';
import { turnNumbers } from './transcript-view';

/** What the workspace panel shows instead of, or with, its tabs. */
export type WorkspaceGate =
  | { kind: 'loading' }
  | { kind: 'ready' }
  | { kind: 'starting'; message?: string }
  | { kind: 'unavailable'; code?: string; message?: string };

/**
 * The panel's gate from the session's status: enabled when the daemon
 * says its executor serves the workspace (`workspace.status` ready), which
 * holds while the agent is stopped, failed to resume or cannot resume at
 * all; a spinner while the executor (its host) starts or reconnects; why
 * not otherwise. A daemon that predates `workspace` in the status serves
 * the workspace wherever it serves the session: ready unless its executor
 * is starting.
 */
export function workspaceGate(status: SessionStatus | undefined): WorkspaceGate {
  if (!status) return { kind: 'loading' };
  const w = status.workspace;
  if (!w) return status.executorStatus === 'starting' || status.executorStatus === 'reconnecting' ? { kind: 'starting' } : { kind: 'ready' };
  switch (w.status) {
    case 'ready':
      return { kind: 'ready' };
    case 'starting':
      return { kind: 'starting', ...(w.errorMessage ? { message: w.errorMessage } : {}) };
    default:
      return { kind: 'unavailable', ...(w.errorCode ? { code: w.errorCode } : {}), ...(w.errorMessage ? { message: w.errorMessage } : {}) };
  }
}

/** One turn whose changes can be shown, with the turn that ended it. */
export interface TurnRange {
  promptId: string;
  /**
   * The turn's number in its session, from 1 (its seq): the pane may hold
   * only the latest turns, so not its place among them.
   */
  index: number;
  /** The next turn that ran: its checkpoint is where this turn ended. */
  toTurn?: string;
  /** The prompt's text (queued turns and continuations have none). */
  text?: string;
  kind: string;
  state: string;
}

/**
 * The turns that ran (every turn but those still queued or withdrawn
 * before they ran), oldest first, each with the next one: "what turn N
 * changed" is its checkpoint against the next turn's, and the last turn's
 * against the working tree. Only the loaded turns are listed (the latest
 * pages of the transcript); a turn's next one is always loaded with it.
 */
export function turnRanges(s: Pick<SessionViewState, 'turnOrder' | 'turns'>): TurnRange[] {
  const ran = s.turnOrder.map((id) => s.turns[id]).filter((t): t is TurnView => t !== undefined && t.state !== 'queued');
  const numbers = turnNumbers(ran);
  return ran.map((t, i) => ({
    promptId: t.promptId,
    index: numbers[i]!,
    kind: t.kind,
    state: t.state,
    ...(t.text ? { text: t.text } : {}),
    ...(ran[i + 1] ? { toTurn: ran[i + 1]!.promptId } : {}),
  }));
}

/** A line of a patch as the Changes view shows it. */
export interface PatchLine {
  kind: 'add' | 'del' | 'ctx' | 'hunk' | 'meta';
  text: string;
}

/** One file's part of a unified patch. */
export interface PatchFile {
  /** The new path (the old one for a deleted file). */
  path: string;
  lines: PatchLine[];
}

/**
 * Splits `git diff` output into files and classifies each line. Headers
 * (`diff --git`, `index`, `---`, `+++`, mode and rename lines) are `meta`,
 * so that a `+++` header is never counted as an added line.
 */
export function parsePatch(patch: string): PatchFile[] {
  const files: PatchFile[] = [];
  let cur: PatchFile | undefined;
  let inHunk = false;
  for (const line of patch.split('\n')) {
    if (line.startsWith('diff --git ')) {
      const m = /^diff --git "?a\/(.*?)"? "?b\/(.*?)"?$/.exec(line);
      cur = { path: m?.[2] ?? line.slice(11), lines: [{ kind: 'meta', text: line }] };
      files.push(cur);
      inHunk = false;
      continue;
    }
    if (!cur) continue;
    if (line.startsWith('@@')) {
      inHunk = true;
      cur.lines.push({ kind: 'hunk', text: line });
    } else if (!inHunk) {
      const m = /^\+\+\+ b\/(.*)$/.exec(line);
      if (m) cur.path = m[1]!;
      cur.lines.push({ kind: 'meta', text: line });
    } else if (line.startsWith('+')) cur.lines.push({ kind: 'add', text: line });
    else if (line.startsWith('-')) cur.lines.push({ kind: 'del', text: line });
    else if (line.startsWith('\\')) cur.lines.push({ kind: 'meta', text: line });
    else if (line !== '' || cur.lines.length > 0) cur.lines.push({ kind: 'ctx', text: line });
  }
  for (const f of files) {
    while (f.lines.length > 0 && f.lines[f.lines.length - 1]!.kind === 'ctx' && f.lines[f.lines.length - 1]!.text === '') f.lines.pop();
  }
  return files;
}

/** Bytes as a person reads them. */
export function formatSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** Decodes a file read's content: text as it is, base64 as UTF-8 (lossy). */
export function fileText(content: string, encoding: 'utf-8' | 'base64'): string {
  if (encoding === 'utf-8') return content;
  const bin = atob(content);
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}
