import { useContext, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { createContext } from 'preact';
import { useT } from '../i18n';
import { shortId } from '../lib/ids';
import { useStore } from '../lib/use-store';
import { bannerGate } from '../state/banner';
import type { SessionController } from '../state/session-controller';
import { isReadOnly, isTurnBusy, activeTurn } from '../state/selectors';
import type { AgentProfile } from '../state/types';
import { ConnectionBadge, ExecutorBadge, SandboxBadge, SessionStateBadge, Spinner, connView } from './Badges';
import { Composer, type ComposerExtras } from './Composer';
import { ConfirmDialog } from './ConfirmDialog';
import { ForkOrigin, UndoRewindNotice } from './Branching';
import { IconClose } from './Icons';
import { AGENT_AUTH_REQUIRED, AuthBanner } from './AuthBanner';
import { RecoveryBanner } from './RecoveryBanner';
import { UsageGauge } from './Usage';
import { BudgetEditor, BudgetGauge } from './Budget';
import { PermissionDock } from './PermissionCard';
import { PlanView, Timeline } from './Timeline';
import type { ChangesScope } from './ChangesView';
import { WorkspaceApiContext, WorkspacePanel, type WorkspaceTab } from './WorkspacePanel';
import { promptBlocks } from '../lib/prompt-blocks';
import { load, save } from '../lib/storage';

export const AgentsContext = createContext<Record<string, AgentProfile>>({});

export interface ChatPaneProps {
  controller: SessionController;
  /** The session this pane shows now (guard: anything else is not shown). */
  shownSessionId: string;
  isMain: boolean;
  active: boolean;
  onFocus: () => void;
  onClose?: () => void;
  onStartNew: (from: { agentProfileId: string; cwd: string; taskId: string }) => void;
  /** Ends the session; the pane has asked the user first. */
  onEndSession: () => void;
}

/** Whether a session's workspace panel is open, and on which tab: kept per session across reloads. */
interface WorkspacePrefs {
  open: boolean;
  tab: WorkspaceTab;
}

const wsPrefsKey = (sessionId: string) => `tether.workspace.${sessionId}`;

function useWorkspacePrefs(sessionId: string): [WorkspacePrefs, (p: WorkspacePrefs) => void] {
  const read = () => load<WorkspacePrefs>(wsPrefsKey(sessionId), { open: false, tab: 'files' });
  const [prefs, setPrefs] = useState<{ id: string; p: WorkspacePrefs }>(() => ({ id: sessionId, p: read() }));
  const current = prefs.id === sessionId ? prefs.p : read();
  return [
    current,
    (p) => {
      save(wsPrefsKey(sessionId), p);
      setPrefs({ id: sessionId, p });
    },
  ];
}

export function ChatPane({ controller, shownSessionId, isMain, active, onFocus, onClose, onStartNew, onEndSession }: ChatPaneProps) {
  const { t } = useT();
  const agents = useContext(AgentsContext);
  const s = useStore(controller.store);
  const wsApi = useContext(WorkspaceApiContext)(shownSessionId);
  const listDir = useMemo(() => (wsApi ? (p: string) => wsApi.workspace.list(p || undefined) : undefined), [wsApi]);
  const [ws, setWs] = useWorkspacePrefs(shownSessionId);
  const [scope, setScope] = useState<ChangesScope>({ kind: 'total' });
  // Ending a session cannot be undone: "End session" asks first.
  const [confirmEnd, setConfirmEnd] = useState(false);
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    // Bring the active pane into view (narrow windows show one at a time).
    if (active) ref.current?.scrollIntoView?.({ block: 'nearest', inline: 'nearest' });
  }, [active, shownSessionId]);
  if (s.sessionId !== shownSessionId) return null; // never render another session's state here
  const banner = bannerGate(s, shownSessionId);
  const readOnly = isReadOnly(s);
  const continuing = s.continuation.status === 'sending' || s.continuation.status === 'accepted';
  // A continuation in flight is a turn like any other: Cancel stays offered.
  const busy = isTurnBusy(s) || continuing;
  const running = activeTurn(s);
  const execStatus = s.executor.status ?? s.status?.executorStatus;
  const starting = s.resuming || execStatus === 'starting';
  const agentId = s.session?.agentProfileId ?? s.status?.agentProfileId ?? '';
  const agent = agents[agentId];
  const title = s.session?.title || agent?.displayName || agentId || t('pane.sessionLabel', { name: shortId(s.sessionId) });
  const st = s.status;
  const notResumable = !readOnly && st?.resumeReason === 'not_resumable' && !st.isAgentRunning;
  const blocked = !readOnly && (st?.resumeReason === 'agent_unavailable' || st?.resumeReason === 'working_directory_missing');
  // A reconnecting executor comes back by itself (the agent runs on its
  // host): there is nothing to resume.
  const live = execStatus === 'starting' || execStatus === 'ready' || execStatus === 'reconnecting';
  const needsResume = !readOnly && !notResumable && st?.needsResume && st.isResumable && !live;
  const conn = connView(s.connection, s.everOpen, s.closed);
  const budgetEditorId = `budget-${s.sessionId}`;
  // The agent needs credentials: its own banner says what to do, instead
  // of the generic resume offer.
  const authRequired = !readOnly && execStatus === 'error' && s.executor.code === AGENT_AUTH_REQUIRED && !s.resuming;
  // What the agent said it takes in a prompt (initialize), as its profile
  // last recorded it (at start-up's probe and every start since).
  const prompts = agent?.capabilities?.promptCapabilities ?? { image: false, embeddedContext: false };
  const send = async (text: string, extras: ComposerExtras) => {
    if (extras.images.length === 0 && extras.mentions.length === 0) return controller.sendPrompt(text);
    const blocks = await promptBlocks(text, extras.images, extras.mentions, {
      cwd: s.session?.cwd ?? '',
      embed: prompts.embeddedContext,
      read: wsApi ? (p, r) => wsApi.workspace.read(p, r) : undefined,
    });
    return controller.sendPrompt(pendingText(text, extras), undefined, blocks);
  };
  const showTurnChanges = (promptId: string) => {
    setScope({ kind: 'turn', promptId });
    setWs({ open: true, tab: 'changes' });
  };
  return (
    <section
      ref={ref}
      class={`pane${active ? ' pane--active' : ''}${ws.open ? ' pane--workspace' : ''}`}
      aria-label={t('pane.sessionLabel', { name: title })}
      data-testid="pane"
      data-session-id={s.sessionId}
      data-main={isMain ? 'true' : 'false'}
      onFocusCapture={onFocus}
      onMouseDown={onFocus}
      onKeyDown={(e) => {
        if (e.key === 'Escape' && busy && !e.defaultPrevented) {
          e.preventDefault();
          void controller.cancel();
        }
      }}
    >
      <header class="pane__head">
        <div class="pane__title">
          <h2 title={s.sessionId}>{title}</h2>
          <div class="pane__sub">
            <span class="mono" title={s.session?.cwd}>
              {s.session?.cwd ?? ''}
            </span>
            <span class="muted">· {shortId(s.sessionId)}</span>
            <ForkOrigin s={s} />
          </div>
        </div>
        <div class="pane__tools">
          <button
            type="button"
            class={`btn btn--ghost btn--small${ws.open ? ' btn--on' : ''}`}
            aria-pressed={ws.open}
            title={t('ws.toggleHint')}
            data-testid="workspace-toggle"
            onClick={() => setWs({ ...ws, open: !ws.open })}
          >
            {t('ws.toggle')}
          </button>
          {!readOnly && (
            <button type="button" class="btn btn--ghost btn--small" onClick={() => setConfirmEnd(true)} title={t('pane.closeSession')} data-testid="end-session">
              {t('pane.closeSession')}
            </button>
          )}
          {onClose && (
            <button type="button" class="btn btn--ghost btn--icon" onClick={onClose} aria-label={t('pane.close')} title={t('pane.close')}>
              <IconClose />
            </button>
          )}
        </div>
        <div class="pane__badges">
          <SessionStateBadge state={s.state} />
          <ConnectionBadge view={conn} />
          <ExecutorBadge
            status={execStatus}
            error={s.executor.error ?? st?.errorMessage}
            resuming={s.resuming}
            runtime={s.executor.runtime ?? st?.runtime}
            host={s.executor.host}
            onRetry={() => void controller.resume()}
          />
          <SandboxBadge sandbox={s.sandbox} />
          <UsageGauge usage={s.usage} />
          <BudgetGauge
            budget={s.budget}
            usage={s.usage}
            open={s.budgetEditor}
            onToggle={readOnly ? undefined : () => controller.openBudgetEditor(!s.budgetEditor)}
            editorId={budgetEditorId}
          />
        </div>
      </header>
      {s.budgetEditor && !readOnly && (
        <BudgetEditor id={budgetEditorId} budget={s.budget} onSave={(b) => controller.setBudget(b)} onClose={() => controller.openBudgetEditor(false)} />
      )}

      <div class="pane__body">
        <div class="pane__chat">
          {s.plan && <PlanView plan={s.plan} running={!!running} />}

          {s.phase === 'loading' && (
            <div class="pane__center" role="status">
              <Spinner /> {t('pane.loading')}
            </div>
          )}
          {s.phase === 'error' && (
            <div class="pane__center" role="alert">
              <p>{t('pane.loadFailed', { error: s.loadError ?? '' })}</p>
              <button type="button" class="btn" onClick={() => controller.reload()}>
                {t('pane.retryNow')}
              </button>
            </div>
          )}
          {s.phase === 'ready' && (
            <Timeline
              s={s}
              onRetryPrompt={(id) => controller.retryPrompt(id)}
              onDiscardPrompt={(id) => controller.discardPrompt(id)}
              onWithdrawTurn={(id) => void controller.withdraw(id)}
              onShowTurnChanges={showTurnChanges}
              onCancelTurn={readOnly ? undefined : () => void controller.cancel()}
              onLoadOlder={() => void controller.loadOlder()}
            />
          )}

          <div class="pane__foot">
            {s.notice && (
              <div class={`notice notice--${s.notice.kind}`} role="alert">
                <span>{s.notice.text}</span>
                <button type="button" class="btn btn--link" onClick={() => controller.dismissNotice()}>
                  {t('pane.dismiss')}
                </button>
              </div>
            )}
            {(notResumable || blocked) && (
              <div class="notice notice--warn" data-testid="not-resumable">
                <span>{notResumable ? t('pane.notResumable') : st?.resumeReason === 'agent_unavailable' ? t('pane.agentUnavailable') : t('pane.cwdMissing')}</span>
                <button
                  type="button"
                  class="btn btn--primary btn--small"
                  onClick={() => onStartNew({ agentProfileId: agentId, cwd: s.session?.cwd ?? '', taskId: s.session?.taskId ?? st?.taskId ?? '' })}
                >
                  {t('pane.startNew')}
                </button>
              </div>
            )}
            {(authRequired || (s.resuming && s.executor.code === AGENT_AUTH_REQUIRED)) && (
              <AuthBanner
                message={s.executor.error ?? st?.errorMessage}
                methods={s.executor.authMethods ?? agent?.capabilities?.authMethods ?? []}
                profileId={agentId}
                retrying={s.resuming}
                onRetry={() => void controller.resume()}
              />
            )}
            {needsResume && !authRequired && !busy && !banner.visible && (
              <div class="notice notice--info" data-testid="needs-resume">
                <span>{t('pane.needsResume')}</span>
                <button type="button" class="btn btn--small" onClick={() => void controller.resume()} disabled={s.resuming}>
                  {s.resuming ? t('pane.resuming') : t('pane.resume')}
                </button>
              </div>
            )}
            {s.contextLost && !readOnly && <div class="notice notice--info">{t('pane.contextLost')}</div>}
            <UndoRewindNotice s={s} />
            {readOnly && <div class="notice">{t('pane.readOnly')}</div>}
            <PermissionDock s={s} onAnswer={(rid, oid) => void controller.answerPermission(rid, oid)} />
            <RecoveryBanner
              model={banner}
              onContinue={() => void controller.continue()}
              onCheckAgain={() => controller.reload()}
              onRaiseBudget={() => controller.openBudgetEditor(true)}
            />
            {!readOnly && (
              <Composer
                sessionId={s.sessionId}
                starting={starting}
                readOnly={readOnly}
                busy={busy || !!running}
                cancelling={s.cancelling}
                autoFocus={active}
                onSend={(text, extras) => void send(text, extras)}
                images={prompts.image}
                listDir={listDir}
                onCancel={() => void controller.cancel()}
                commands={s.availableCommands}
                options={s.options}
                onSetMode={(id) => void controller.setMode(id)}
                onSetConfig={(id, v) => void controller.setConfigOption(id, v)}
              />
            )}
          </div>
        </div>
        {ws.open && (
          <WorkspacePanel
            s={s}
            tab={ws.tab}
            onTab={(tab) => setWs({ open: true, tab })}
            scope={scope}
            onScope={setScope}
            onClose={() => setWs({ ...ws, open: false })}
            onCheckAgain={() => void controller.refreshStatus()}
          />
        )}
      </div>
      {confirmEnd && (
        <ConfirmDialog
          title={t('pane.closeSessionTitle')}
          text={t('pane.closeSessionConfirm')}
          confirmLabel={t('pane.closeSession')}
          cancelLabel={t('pane.closeSessionCancel')}
          onConfirm={() => {
            setConfirmEnd(false);
            onEndSession();
          }}
          onCancel={() => setConfirmEnd(false)}
        />
      )}
    </section>
  );
}

/** What a message shows while it is sent: its text, then what it carries. */
function pendingText(text: string, extras: ComposerExtras): string {
  const names = extras.images.map((i) => `[image: ${i.name}]`);
  return [text.trim(), names.join(' ')].filter(Boolean).join('\n');
}
