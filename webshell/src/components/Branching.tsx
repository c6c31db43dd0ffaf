// Rewind, fork and hand-off in the chat pane (docs/rewind.md): each ended
// turn offers "Rewind to here" (with a preview of the file changes, from
// a dry run), "Fork from here" and, on the latest turn, "Continue with
// another agent…"; rewound turns are greyed and folded; a rewind can be
// undone from the notice it leaves; a fork names its origin and the
// origin its forks, each a link to the other.
import { createContext } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';
import type { RewindResult } from '@tether/client';
import { useT, type MessageKey } from '../i18n';
import { errorCode, errorText } from '../lib/errors';
import { shortId } from '../lib/ids';
import type { SessionViewState, TimelineItem } from '../state/session-state';
import type { SessionSummary } from '../state/tasks-state';
import { activeTurn, isReadOnly } from '../state/selectors';
import { turnCount } from '../state/transcript-view';
import { AgentsContext } from './ChatPane';

/** What the pane needs of the daemon and the app to branch a session. */
export interface BranchApi {
  rewind(sessionId: string, toTurn: string, dryRun: boolean): Promise<RewindResult>;
  undoRewind(sessionId: string): Promise<RewindResult>;
  /** Forks at a turn (into cwd, else a new worktree) and opens the fork beside. */
  fork(sessionId: string, atTurn: string, cwd?: string): Promise<void>;
  /** Hands the session to another agent and opens the new session. */
  handoff(sessionId: string, agentProfileId: string): Promise<void>;
  open(sessionId: string): void;
  summary(sessionId: string): SessionSummary | undefined;
  forksOf(taskId: string, sessionId: string): SessionSummary[];
}

export const BranchApiContext = createContext<BranchApi | undefined>(undefined);

const nameOf = (x: SessionSummary | undefined, id: string) => x?.title || shortId(id);

/** The turn a timeline item belongs to ("" for none). */
export function itemTurn(s: SessionViewState, item: TimelineItem): string {
  switch (item.type) {
    case 'message':
      return s.messages[item.id]?.promptId ?? '';
    case 'tool':
      return s.toolCalls[item.id]?.promptId ?? '';
    case 'permission':
      return s.permissions[item.id]?.promptId ?? '';
    default:
      return item.id;
  }
}

/** The latest turn that ended and was not rewound: where a hand-off continues. */
function latestTurn(s: SessionViewState): string | undefined {
  for (let i = s.turnOrder.length - 1; i >= 0; i--) {
    const t = s.turns[s.turnOrder[i]!];
    if (t && !t.rewound && t.state !== 'queued') return t.state === 'running' ? undefined : t.promptId;
  }
  return undefined;
}

/** "Rewind to here · Fork from here · Continue with another agent…" under an ended turn, and its forks. */
export function TurnBranchActions({ s, promptId }: { s: SessionViewState; promptId: string }) {
  const { t } = useT();
  const readOnly = isReadOnly(s);
  const api = useContext(BranchApiContext);
  const [dialog, setDialog] = useState<'rewind' | 'handoff' | 'forkdir'>();
  const [forking, setForking] = useState(false);
  const [error, setError] = useState<string>();
  const turn = s.turns[promptId];
  if (!api || !turn || turn.rewound || turn.state === 'queued' || turn.state === 'running' || turn.stopReason === 'withdrawn') return null;
  const busy = !!activeTurn(s);
  const forks = s.session ? api.forksOf(s.session.taskId, s.sessionId).filter((f) => f.forkedFrom?.promptId === promptId) : [];
  const fork = () => {
    setForking(true);
    setError(undefined);
    api.fork(s.sessionId, promptId).then(
      () => setForking(false),
      (e: unknown) => {
        setForking(false);
        // In no git repository a fork gets no worktree: ask where its files go.
        if (errorCode(e) === 'workspace_not_a_repository') setDialog('forkdir');
        else setError(errorText(e));
      },
    );
  };
  // The dialogs are beside the links, not in them: the links are
  // translucent until hovered, which would make a dialog in them so too.
  return (
    <>
    <div class="branch" data-testid="turn-branch" data-prompt-id={promptId}>
      {!readOnly && (
        <button type="button" class="btn btn--link" title={t('branch.rewindHint')} disabled={busy} onClick={() => setDialog('rewind')} data-testid="rewind-here">
          {t('branch.rewind')}
        </button>
      )}
      <button type="button" class="btn btn--link" title={t('branch.forkHint')} disabled={forking} onClick={fork} data-testid="fork-here">
        {forking ? t('branch.forking') : t('branch.fork')}
      </button>
      {!readOnly && latestTurn(s) === promptId && (
        <button type="button" class="btn btn--link" title={t('branch.handoffHint')} disabled={busy} onClick={() => setDialog('handoff')} data-testid="handoff">
          {t('branch.handoff')}
        </button>
      )}
      {forks.map((f) => (
        <button key={f.id} type="button" class="btn btn--link branch__fork" onClick={() => api.open(f.id)} data-testid="fork-link" data-session-id={f.id}>
          {t(f.forkedFrom?.handoff ? 'branch.handedTo' : 'branch.forkedTo', { name: nameOf(f, f.id) })}
        </button>
      ))}
      {error && (
        <span class="branch__error" role="alert">
          {t('branch.failed', { error })}
        </span>
      )}
    </div>
    {dialog === 'rewind' && <RewindDialog sessionId={s.sessionId} promptId={promptId} onClose={() => setDialog(undefined)} />}
    {dialog === 'handoff' && <HandoffDialog s={s} onClose={() => setDialog(undefined)} />}
    {dialog === 'forkdir' && <ForkDirDialog s={s} promptId={promptId} onClose={() => setDialog(undefined)} />}
    </>
  );
}

/** The rewind's question, with what it would change (a dry run) before anything changes. */
function RewindDialog({ sessionId, promptId, onClose }: { sessionId: string; promptId: string; onClose: () => void }) {
  const { t } = useT();
  const api = useContext(BranchApiContext)!;
  const [preview, setPreview] = useState<RewindResult>();
  const [working, setWorking] = useState(false);
  const [error, setError] = useState<string>();
  useEffect(() => {
    let live = true;
    api.rewind(sessionId, promptId, true).then(
      (r) => live && setPreview(r),
      (e: unknown) => live && setError(errorText(e)),
    );
    return () => {
      live = false;
    };
  }, [sessionId, promptId]);
  const confirm = () => {
    setWorking(true);
    api.rewind(sessionId, promptId, false).then(onClose, (e: unknown) => (setWorking(false), setError(errorText(e))));
  };
  const user = new Set(preview?.userChanged ?? []);
  return (
    <Modal
      title={t('branch.rewindTitle')}
      onCancel={onClose}
      testid="rewind-dialog"
      error={error}
      action={{ label: working ? t('branch.working') : t('branch.confirmRewind'), danger: true, disabled: !preview || working, onClick: confirm, testid: 'rewind-confirm' }}
    >
      <p>{t('branch.rewindExplain')}</p>
      {!preview && !error && <p role="status">{t('branch.previewing')}</p>}
      {preview && preview.files.length === 0 && <p>{t('branch.nothing')}</p>}
      {preview && preview.files.length > 0 && (
        <>
          <p>{t('branch.files', { n: preview.files.length })}</p>
          <ul class="branch__files" data-testid="rewind-preview">
            {preview.files.map((f) => (
              <li key={f.path} class={`changed__file changed__file--${f.status}${user.has(f.path) ? ' branch__file--user' : ''}`} data-status={f.status} data-path={f.path}>
                <span class="changed__status">{t(`ws.status.${f.status}` as MessageKey)}</span>
                <span class="mono changed__path">{f.oldPath ? `${f.oldPath} → ${f.path}` : f.path}</span>
                {user.has(f.path) && <em> — {t('branch.userChanged')}</em>}
              </li>
            ))}
          </ul>
          {user.size > 0 && (
            <p class="notice notice--warn" data-testid="rewind-user-changed">
              {t('branch.userWarning', { n: user.size })}
            </p>
          )}
        </>
      )}
    </Modal>
  );
}

/** Which agent continues the session. */
function HandoffDialog({ s, onClose }: { s: SessionViewState; onClose: () => void }) {
  const { t } = useT();
  const api = useContext(BranchApiContext)!;
  const agents = Object.values(useContext(AgentsContext)).filter((a) => a.available);
  const current = s.session?.agentProfileId;
  const [pick, setPick] = useState(agents.find((a) => a.id !== current)?.id ?? agents[0]?.id ?? '');
  const [working, setWorking] = useState(false);
  const [error, setError] = useState<string>();
  const confirm = () => {
    setWorking(true);
    api.handoff(s.sessionId, pick).then(onClose, (e: unknown) => (setWorking(false), setError(errorText(e))));
  };
  return (
    <Modal
      title={t('branch.handoffTitle')}
      onCancel={onClose}
      testid="handoff-dialog"
      error={error}
      action={{ label: working ? t('branch.working') : t('branch.confirmHandoff'), disabled: !pick || working, onClick: confirm, testid: 'handoff-confirm' }}
    >
      <p>{t('branch.handoffExplain')}</p>
      {agents.length === 0 && <p>{t('branch.noAgents')}</p>}
      <fieldset class="branch__agents">
        {agents.map((a) => (
          <label key={a.id}>
            <input type="radio" name="handoff-agent" value={a.id} checked={pick === a.id} onChange={() => setPick(a.id)} /> {a.displayName || a.id}
            {a.id === current && <span class="muted"> ({current})</span>}
          </label>
        ))}
      </fieldset>
    </Modal>
  );
}

/**
 * "Fork into a directory": for a session in no git repository, whose fork
 * gets no worktree, the new or empty directory the turn's files go to
 * (a sibling of the session's directory is offered).
 */
function ForkDirDialog({ s, promptId, onClose }: { s: SessionViewState; promptId: string; onClose: () => void }) {
  const { t } = useT();
  const api = useContext(BranchApiContext)!;
  const [dir, setDir] = useState(`${s.session?.cwd ?? ''}-fork-${shortId(promptId)}`);
  const [working, setWorking] = useState(false);
  const [error, setError] = useState<string>();
  const confirm = () => {
    setWorking(true);
    setError(undefined);
    api.fork(s.sessionId, promptId, dir.trim()).then(onClose, (e: unknown) => (setWorking(false), setError(errorText(e))));
  };
  return (
    <Modal
      title={t('branch.forkDirTitle')}
      onCancel={onClose}
      testid="forkdir-dialog"
      error={error}
      action={{ label: working ? t('branch.forking') : t('branch.confirmFork'), disabled: !dir.trim().startsWith('/') || working, onClick: confirm, testid: 'forkdir-confirm' }}
    >
      <p>{t('branch.forkDirExplain')}</p>
      <label class="branch__dir">
        {t('branch.forkDirLabel')}
        <input type="text" value={dir} spellcheck={false} onInput={(e) => setDir(e.currentTarget.value)} data-testid="forkdir-input" />
      </label>
    </Modal>
  );
}

/** A dialog's confirming button. */
interface ModalAction {
  label: string;
  onClick: () => void;
  disabled: boolean;
  testid: string;
  danger?: boolean;
}

/** A dialog over the page: its text, the error of its last try, Cancel and its action. */
function Modal({ title, onCancel, testid, error, action, children }: { title: string; onCancel: () => void; testid: string; error?: string; action: ModalAction; children: preact.ComponentChildren }) {
  const { t } = useT();
  return (
    <div class="modal" onMouseDown={(e) => e.target === e.currentTarget && onCancel()}>
      <div
        class="modal__box"
        role="dialog"
        aria-modal="true"
        aria-label={title}
        data-testid={testid}
        onKeyDown={(e) => {
          if (e.key === 'Escape') {
            e.preventDefault();
            e.stopPropagation();
            onCancel();
          }
        }}
      >
        <h2>{title}</h2>
        {children}
        {error && (
          <p class="notice notice--error" role="alert">
            {t('branch.failed', { error })}
          </p>
        )}
        <div class="modal__actions">
          <button type="button" class="btn" onClick={onCancel}>
            {t('branch.cancel')}
          </button>
          <button type="button" class={`btn ${action.danger ? 'btn--danger' : 'btn--primary'}`} disabled={action.disabled} onClick={action.onClick} data-testid={action.testid}>
            {action.label}
          </button>
        </div>
      </div>
    </div>
  );
}

/** "Rewound to turn …: n files changed. Undo", while the last rewind can be undone. */
export function UndoRewindNotice({ s }: { s: SessionViewState }) {
  const { t } = useT();
  const readOnly = isReadOnly(s);
  const api = useContext(BranchApiContext);
  const [working, setWorking] = useState(false);
  const [error, setError] = useState<string>();
  const last = s.session?.lastRewind;
  // The session's count of turns, not the loaded ones' (only its latest pages may be).
  if (!api || readOnly || !last || last.turns !== turnCount(s) || activeTurn(s)) return null;
  const undo = () => {
    setWorking(true);
    setError(undefined);
    api.undoRewind(s.sessionId).then(
      () => setWorking(false),
      (e: unknown) => (setWorking(false), setError(errorText(e))),
    );
  };
  return (
    <div class="notice notice--info" data-testid="undo-rewind">
      <span>{last.undoes ? t('branch.undoneNotice') : t('branch.undoNotice', { turn: shortId(last.toPromptId ?? ''), n: last.rewound.length })}</span>
      {error && <span role="alert"> {t('branch.failed', { error })}</span>}
      <button type="button" class="btn btn--small" disabled={working} onClick={undo} data-testid="undo-rewind-button">
        {working ? t('branch.working') : last.undoes ? t('branch.redo') : t('branch.undo')}
      </button>
    </div>
  );
}

/** "Forked from … at turn …" under the pane's title: a link to the origin. */
export function ForkOrigin({ s }: { s: SessionViewState }) {
  const { t } = useT();
  const api = useContext(BranchApiContext);
  const o = s.session?.forkedFrom;
  if (!api || !o) return null;
  const name = nameOf(api.summary(o.sessionId), o.sessionId);
  return (
    <button type="button" class="btn btn--link pane__origin" onClick={() => api.open(o.sessionId)} data-testid="fork-origin" data-session-id={o.sessionId}>
      {t(o.handoff ? 'branch.handedFrom' : 'branch.forkedFrom', { name, turn: shortId(o.promptId) })}
    </button>
  );
}

/** The fold of a run of rewound turns: "3 rewound turns · Show". */
export function RewoundFold({ count, open, onToggle }: { count: number; open: boolean; onToggle: () => void }) {
  const { t } = useT();
  return (
    <div class="divider divider--rewound" data-testid="rewound-fold">
      <span>
        {t('branch.rewound', { n: count })} ·{' '}
        <button type="button" class="btn btn--link" aria-expanded={open} onClick={onToggle} data-testid="rewound-toggle">
          {open ? t('branch.hideRewound') : t('branch.showRewound')}
        </button>
      </span>
    </div>
  );
}
