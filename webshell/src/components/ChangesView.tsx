// The workspace panel's Changes tab: what each turn changed (its
// checkpoint against the next turn's, the last one's against the working
// tree), everything since the first turn began, or the working tree
// against git's HEAD, as a file list and a highlighted diff per file, side
// by side or unified.
import { useEffect, useState } from 'preact/hooks';
import { useT, type MessageKey } from '../i18n';
import { errorCode, errorText } from '../lib/errors';
import { parsePatch, type TurnRange } from '../state/workspace';
import type { GitDiff, WorkspaceApi } from '../state/types';
import { Spinner } from './Badges';
import { DiffBlock, DiffFormatSwitch, useDiffFormat } from './DiffBlock';
import type { DiffFormat } from '../lib/diff-render';

/** Which diff is shown: a turn's promptId, or one of the two totals. */
export type ChangesScope = { kind: 'turn'; promptId: string } | { kind: 'total' } | { kind: 'head' };

export interface ChangesViewProps {
  api: WorkspaceApi;
  ranges: TurnRange[];
  scope: ChangesScope;
  onScope: (s: ChangesScope) => void;
}

function scopeValue(s: ChangesScope): string {
  return s.kind === 'turn' ? `turn:${s.promptId}` : s.kind;
}

function scopeOf(v: string): ChangesScope {
  return v.startsWith('turn:') ? { kind: 'turn', promptId: v.slice(5) } : v === 'head' ? { kind: 'head' } : { kind: 'total' };
}

type Loaded = { status: 'loading' } | { status: 'ready'; diff: GitDiff } | { status: 'error'; code?: string; error: string };

export function ChangesView({ api, ranges, scope, onScope }: ChangesViewProps) {
  const { t } = useT();
  const [loaded, setLoaded] = useState<Loaded>({ status: 'loading' });
  const [nonce, setNonce] = useState(0);
  const [format, setFormat] = useDiffFormat();
  const range = scope.kind === 'turn' ? ranges.find((r) => r.promptId === scope.promptId) : undefined;
  const first = ranges[0]?.promptId;
  // Read again when the range ends (its turn settles, or a next turn
  // begins) and on Refresh.
  const key = `${scopeValue(scope)}|${range?.toTurn ?? ''}|${range?.state ?? ''}|${first ?? ''}|${nonce}`;

  useEffect(() => {
    let live = true;
    let req: Promise<GitDiff> | undefined;
    if (scope.kind === 'head') req = api.workspace.diff({ patch: true });
    else if (scope.kind === 'total' && first) req = api.workspace.diff({ turn: first, patch: true });
    else if (scope.kind === 'turn') req = api.workspace.diff({ turn: scope.promptId, ...(range?.toTurn ? { toTurn: range.toTurn } : {}), patch: true });
    if (!req) {
      setLoaded({ status: 'error', code: 'no_turns', error: t('ws.changes.noTurns') });
      return;
    }
    setLoaded({ status: 'loading' });
    req.then(
      (diff) => live && setLoaded({ status: 'ready', diff }),
      (e: unknown) => live && setLoaded({ status: 'error', code: errorCode(e), error: errorText(e) }),
    );
    return () => {
      live = false;
    };
  }, [api, key]);

  const turnLabel = (r: TurnRange) => {
    const text = r.kind === 'continue' ? t('ws.changes.continuation') : r.text?.split('\n')[0]?.slice(0, 60);
    const base = text ? t('ws.changes.turn', { n: r.index, text }) : t('ws.changes.turnNoText', { n: r.index });
    return r.toTurn ? base : `${base} ${t('ws.changes.untilNow')}`;
  };

  return (
    <div class="changes" data-testid="ws-changes" data-scope={scopeValue(scope)}>
      <div class="ws__bar">
        <select
          class="changes__pick"
          aria-label={t('ws.changes.label')}
          value={scopeValue(scope)}
          onChange={(e) => onScope(scopeOf((e.currentTarget as HTMLSelectElement).value))}
          data-testid="ws-changes-scope"
        >
            <option value="total">{t('ws.changes.total')}</option>
            {ranges.map((r) => (
              <option key={r.promptId} value={`turn:${r.promptId}`}>
                {turnLabel(r)}
              </option>
            ))}
            <option value="head">{t('ws.changes.head')}</option>
        </select>
        <DiffFormatSwitch format={format} onFormat={setFormat} />
        <button type="button" class="btn btn--ghost btn--small" onClick={() => setNonce(nonce + 1)}>
          {t('ws.refresh')}
        </button>
      </div>
      {loaded.status === 'loading' && (
        <div class="ws__note">
          <Spinner /> {t('ws.loading')}
        </div>
      )}
      {loaded.status === 'error' && (
        <div class={`ws__note${loaded.code === 'no_turns' ? '' : ' ws__note--error'}`} role={loaded.code === 'no_turns' ? undefined : 'alert'} data-testid="ws-changes-error">
          {loaded.code === 'workspace_checkpoint_not_found'
            ? t('ws.changes.noCheckpoint')
            : loaded.code === 'workspace_not_a_repository'
              ? t('ws.changes.notRepo')
              : loaded.error}
        </div>
      )}
      {loaded.status === 'ready' && <DiffView diff={loaded.diff} format={format} />}
    </div>
  );
}

function DiffView({ diff, format }: { diff: GitDiff; format: DiffFormat }) {
  const { t } = useT();
  if (diff.files.length === 0) return <div class="ws__note">{t('ws.changes.none')}</div>;
  const add = diff.files.reduce((n, f) => n + f.additions, 0);
  const del = diff.files.reduce((n, f) => n + f.deletions, 0);
  const patches = new Map(parsePatch(diff.patch ?? '').map((p) => [p.path, p]));
  return (
    <div class="diff-view">
      <div class="ws__note">
        {t(diff.files.length === 1 ? 'ws.changes.summaryOne' : 'ws.changes.summary', { files: diff.files.length, add, del })}
        {diff.headMoved ? <> · {t('ws.changes.headMoved')}</> : null}
      </div>
      <ul class="changed" data-testid="ws-changed-files">
        {diff.files.map((f) => (
          <li key={f.path} class={`changed__file changed__file--${f.status}`} data-testid="ws-changed-file" data-path={f.path} data-status={f.status}>
            <span class="changed__status">{t(`ws.status.${f.status}` as MessageKey)}</span>
            <span class="mono changed__path">{f.oldPath ? `${f.oldPath} → ${f.path}` : f.path}</span>
            <span class="changed__counts">{f.binary ? t('ws.changes.binary') : `+${f.additions} −${f.deletions}`}</span>
          </li>
        ))}
      </ul>
      {diff.files.map((f) => {
        const p = patches.get(f.path);
        if (!p) return null;
        return <PatchSection key={f.path} path={f.path} patch={p.lines.map((l) => l.text).join('\n')} format={format} open={diff.files.length <= 20} />;
      })}
      {diff.patchTruncated && <div class="ws__note">{t('ws.changes.patchTruncated')}</div>}
    </div>
  );
}

/** One file's diff, drawn once its section is first opened (many files start folded). */
function PatchSection({ path, patch, format, open }: { path: string; patch: string; format: DiffFormat; open: boolean }) {
  const [seen, setSeen] = useState(open);
  return (
    <details class="patch" open={open} onToggle={(e) => (e.currentTarget as HTMLDetailsElement).open && setSeen(true)}>
      <summary class="mono">{path}</summary>
      {seen && <DiffBlock patch={patch} format={format} testId="ws-patch" path={path} />}
    </details>
  );
}
