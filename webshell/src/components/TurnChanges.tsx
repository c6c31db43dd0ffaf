// "Changes in this turn" under the turns that changed files, and only
// there: a link under every turn, most of which only talked or read,
// promised changes that were not there.
import { useContext, useEffect, useState } from 'preact/hooks';
import { useT } from '../i18n';
import type { SessionViewState } from '../state/session-state';
import type { ToolCall, WorkspaceApi } from '../state/types';
import { turnRanges } from '../state/workspace';
import { WorkspaceApiContext } from './WorkspacePanel';

/** Tool kinds that change nothing (ACP's ToolKind). */
const READ_ONLY_KINDS = new Set(['read', 'search', 'fetch', 'think', 'switch_mode']);
/** Tool kinds that are a file change when they complete. */
const WRITE_KINDS = new Set(['edit', 'delete', 'move']);

/**
 * What a turn's tool calls say of its file changes: `maybe` when one of
 * them could have changed a file (anything but a read; a command may write),
 * `edited` when one surely did (a completed edit, delete or move). A turn
 * absent from the map only talked or read: no link, and nothing is asked.
 */
export type TurnWrites = 'maybe' | 'edited';

export function turnWrites(toolCalls: Record<string, ToolCall>): Map<string, TurnWrites> {
  const out = new Map<string, TurnWrites>();
  for (const c of Object.values(toolCalls)) {
    if (!c.promptId || READ_ONLY_KINDS.has(c.kind ?? '')) continue;
    if (WRITE_KINDS.has(c.kind ?? '') && c.status === 'completed') out.set(c.promptId, 'edited');
    else if (!out.has(c.promptId)) out.set(c.promptId, 'maybe');
  }
  return out;
}

/** The turn each turn's changes end at (the next turn that ran), by promptId. */
export function nextTurns(s: Pick<SessionViewState, 'turnOrder' | 'turns'>): Map<string, string | undefined> {
  return new Map(turnRanges(s).map((r) => [r.promptId, r.toTurn]));
}

// Asked once per turn and range: an ended turn's checkpoints do not move.
// A turn's last range (to the working tree) is asked again once a next
// turn has run, since its key changes then.
const asked = new Map<string, Promise<boolean>>();
const MAX_ASKED = 2000;

function changedFiles(api: WorkspaceApi, sessionId: string, promptId: string, toTurn: string | undefined): Promise<boolean> {
  const key = JSON.stringify([sessionId, promptId, toTurn ?? '']);
  let p = asked.get(key);
  if (!p) {
    if (asked.size >= MAX_ASKED) asked.delete(asked.keys().next().value!);
    p = api.workspace.diff({ turn: promptId, ...(toTurn ? { toTurn } : {}) }).then((d) => d.files.length > 0);
    // A failure is asked again next time (the executor may be back).
    p.catch(() => asked.delete(key));
    asked.set(key, p);
  }
  return p;
}

/**
 * Whether to offer a turn's changes: the workspace's own diff of the turn
 * decides when a tool call could have written; when the workspace cannot
 * say (no executor, not a repository), a completed edit does.
 */
export function useTurnChanged(sessionId: string, promptId: string, writes: TurnWrites | undefined, toTurn: string | undefined): boolean {
  const apiFor = useContext(WorkspaceApiContext);
  const [changed, setChanged] = useState<{ key: string; value: boolean } | undefined>();
  const key = `${promptId}|${toTurn ?? ''}|${writes ?? ''}`;
  useEffect(() => {
    if (!writes) return;
    const api = apiFor(sessionId);
    if (!api) {
      setChanged({ key, value: writes === 'edited' });
      return;
    }
    let live = true;
    changedFiles(api, sessionId, promptId, toTurn).then(
      (value) => live && setChanged({ key, value }),
      () => live && setChanged({ key, value: writes === 'edited' }),
    );
    return () => {
      live = false;
    };
  }, [apiFor, sessionId, key]);
  return !!writes && changed?.key === key && changed.value;
}

/** The link to what one turn changed (shown where useTurnChanged says so). */
export function TurnChangesButton({ promptId, onShow }: { promptId: string; onShow: (promptId: string) => void }) {
  const { t } = useT();
  return (
    <button type="button" class="btn btn--link turn-end__changes" data-testid="turn-changes" onClick={() => onShow(promptId)}>
      {t('turn.changes')}
    </button>
  );
}
