// The workspace panel beside a chat pane: the session's Files, Changes and
// Terminal, served by its executor. It is enabled while the executor is
// ready, whatever the agent does (stopped, failed to resume, not
// resumable), disabled with a spinner while the executor starts, and says
// why when the executor cannot be reached.
import { createContext } from 'preact';
import { useContext, useEffect, useMemo, useState } from 'preact/hooks';
import { useT, type MessageKey } from '../i18n';
import { turnRanges, workspaceGate } from '../state/workspace';
import type { SessionViewState } from '../state/session-state';
import type { WorkspaceApi } from '../state/types';
import { Spinner } from './Badges';
import { ChangesView, type ChangesScope } from './ChangesView';
import { FilesView } from './FilesView';
import { IconClose } from './Icons';
import { TerminalsView } from './TerminalView';
import '../workspace.css';

/** Gives the panel a session's workspace API (the App: the SDK; tests: fakes). */
export const WorkspaceApiContext = createContext<(sessionId: string) => WorkspaceApi | undefined>(() => undefined);

export type WorkspaceTab = 'files' | 'changes' | 'terminal';

const TABS: WorkspaceTab[] = ['files', 'changes', 'terminal'];

export interface WorkspacePanelProps {
  s: SessionViewState;
  tab: WorkspaceTab;
  onTab: (tab: WorkspaceTab) => void;
  scope: ChangesScope;
  onScope: (scope: ChangesScope) => void;
  onClose: () => void;
  onCheckAgain: () => void;
}

export function WorkspacePanel({ s, tab, onTab, scope, onScope, onClose, onCheckAgain }: WorkspacePanelProps) {
  const { t } = useT();
  const apiFor = useContext(WorkspaceApiContext);
  const api = useMemo(() => apiFor(s.sessionId), [apiFor, s.sessionId]);
  const gate = workspaceGate(s.status);
  // Tabs stay mounted once shown, so that a terminal keeps its screen and
  // connection while another tab is looked at.
  const [seen, setSeen] = useState<Set<WorkspaceTab>>(() => new Set([tab]));
  useEffect(() => {
    if (!seen.has(tab)) setSeen(new Set([...seen, tab]));
  }, [tab]);
  const ranges = useMemo(() => turnRanges(s), [s.turnOrder, s.turns]);
  const ready = gate.kind === 'ready' && !!api;
  // Once shown, the tabs stay mounted while the executor is away (their
  // screens stay, a terminal reconnects by itself); the gate covers them.
  const [everReady, setEverReady] = useState(false);
  useEffect(() => {
    if (ready && !everReady) setEverReady(true);
  }, [ready]);
  return (
    <aside class="ws" aria-label={t('ws.label', { name: s.session?.title || s.sessionId })} data-testid="workspace" data-gate={gate.kind}>
      <div class="ws__head">
        <div class="ws__tabs" role="tablist">
          {TABS.map((k) => (
            <button
              key={k}
              type="button"
              role="tab"
              class={`ws__tab${tab === k ? ' ws__tab--on' : ''}`}
              aria-selected={tab === k}
              disabled={!ready}
              data-testid={`ws-tab-${k}`}
              onClick={() => onTab(k)}
            >
              {t(`ws.tab.${k}` as MessageKey)}
            </button>
          ))}
        </div>
        <button type="button" class="btn btn--ghost btn--icon" onClick={onClose} aria-label={t('ws.close')} title={t('ws.close')}>
          <IconClose />
        </button>
      </div>
      {(gate.kind === 'loading' || gate.kind === 'starting') && (
        <div class={`ws__gate${everReady ? ' ws__gate--over' : ''}`} role="status" data-testid="ws-starting">
          <Spinner /> {gate.kind === 'loading' ? t('ws.loading') : t('ws.starting')}
          {gate.kind === 'starting' && gate.message && <div class="muted">{gate.message}</div>}
        </div>
      )}
      {gate.kind === 'unavailable' && (
        <div class={`ws__gate ws__gate--error${everReady ? ' ws__gate--over' : ''}`} role="alert" data-testid="ws-unavailable">
          <p>{t('ws.unavailable', { error: gate.message ?? gate.code ?? '' })}</p>
          <button type="button" class="btn btn--small" onClick={onCheckAgain}>
            {t('ws.checkAgain')}
          </button>
        </div>
      )}
      {api && (ready || everReady) && (
        <div class="ws__body" inert={!ready}>
          {seen.has('files') && (
            <div class="ws__pane" hidden={tab !== 'files'} role="tabpanel">
              <FilesView api={api} />
            </div>
          )}
          {seen.has('changes') && (
            <div class="ws__pane" hidden={tab !== 'changes'} role="tabpanel">
              <ChangesView api={api} ranges={ranges} scope={scope} onScope={onScope} />
            </div>
          )}
          {seen.has('terminal') && (
            <div class="ws__pane" hidden={tab !== 'terminal'} role="tabpanel">
              <TerminalsView api={api} sessionId={s.sessionId} />
            </div>
          )}
        </div>
      )}
    </aside>
  );
}
