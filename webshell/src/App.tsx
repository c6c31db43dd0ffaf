import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { TetherClient } from '@tether/client';
import { inboxApi, makeClient, sessionApi, tasksApi, workspaceApi } from './api';
import { LangContext, detectLang, translate, type Lang } from './i18n';
import { errorCode, errorText } from './lib/errors';
import { shortId } from './lib/ids';
import { browserNotifyEnv, chooseNotify, enableNotify, notificationPermission, notifyChosen } from './lib/notify';
import { load, save } from './lib/storage';
import { adoptTokenFromLocation, forgetToken, storeToken, storedToken } from './lib/token';
import { useStore } from './lib/use-store';
import { InboxController } from './state/inbox-state';
import { InboxNotifier, noticeFor } from './state/inbox-notify';
import { PaneManager } from './state/panes';
import { SessionController } from './state/session-controller';
import { TasksController, forksOf } from './state/tasks-state';
import type { AgentProfile, ExecutorHost } from './state/types';
import { AGENT_AUTH_REQUIRED } from './components/AuthBanner';
import { AgentsContext, ChatPane } from './components/ChatPane';
import { IconMenu, IconPlus } from './components/Icons';
import { InboxButton, InboxDialog, type NotifyControls } from './components/Inbox';
import { NewSessionDialog, recentDirectories, type NewSessionRequest } from './components/NewSessionDialog';
import { QuickSwitcher } from './components/QuickSwitcher';
import { Sidebar, sessionName } from './components/Sidebar';
import { TokenGate } from './components/TokenGate';
import { WorkspaceApiContext } from './components/WorkspacePanel';
import { BranchApiContext, type BranchApi } from './components/Branching';

interface Settings {
  lang: Lang;
  autoResume: boolean;
}

const SETTINGS_KEY = 'tether.settings';
const PANES_KEY = 'tether.panes';
const CWD_KEY = 'tether.lastCwd';

/** The inbox's notification toggle, on the browser's Notification API. */
const notifyControls: NotifyControls = { permission: notificationPermission, chosen: notifyChosen, enable: enableNotify, disable: () => chooseNotify(false) };

export function App() {
  const [token, setToken] = useState<string | undefined>(() => adoptTokenFromLocation() ?? storedToken());
  const [rejected, setRejected] = useState(false);
  const [settings, setSettings] = useState<Settings>(() => ({ lang: detectLang(), autoResume: false, ...load<Partial<Settings>>(SETTINGS_KEY, {}) }));
  useEffect(() => {
    save(SETTINGS_KEY, settings);
    document.documentElement.lang = settings.lang === 'zh' ? 'zh-CN' : 'en';
  }, [settings]);
  useEffect(() => {
    // A link with a new #token=… opened in this tab later.
    const onHash = () => {
      const t = adoptTokenFromLocation();
      if (t) {
        setRejected(false);
        setToken(t);
      }
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  const unauthorized = () => {
    forgetToken();
    setRejected(true);
    setToken(undefined);
  };

  return (
    <LangContext.Provider value={settings.lang}>
      {token ? (
        <Shell key={token} token={token} settings={settings} setSettings={setSettings} onUnauthorized={unauthorized} onSignOut={() => { forgetToken(); setRejected(false); setToken(undefined); }} />
      ) : (
        <TokenGate
          rejected={rejected}
          onToken={(t) => {
            storeToken(t);
            setRejected(false);
            setToken(t);
          }}
        />
      )}
    </LangContext.Provider>
  );
}

interface ShellProps {
  token: string;
  settings: Settings;
  setSettings: (s: Settings) => void;
  onUnauthorized: () => void;
  onSignOut: () => void;
}

function Shell({ token, settings, setSettings, onUnauthorized, onSignOut }: ShellProps) {
  const t = (k: Parameters<typeof translate>[1], p?: Record<string, string | number>) => translate(settings.lang, k, p);
  const client: TetherClient = useMemo(() => makeClient(token), [token]);
  const workspaceApiFor = useMemo(() => (id: string) => workspaceApi(client, id), [client]);
  const settingsRef = useMemo(() => ({ current: settings }), []);
  settingsRef.current = settings;
  const tasks = useMemo(() => new TasksController(tasksApi(client, token), onUnauthorized), [client]);
  const panes = useMemo(
    () =>
      new PaneManager(
        (id) => new SessionController(sessionApi(client, id), { autoResume: () => settingsRef.current.autoResume, onUnauthorized }),
        (ids) => save(PANES_KEY, ids),
      ),
    [client],
  );
  const inbox = useMemo(() => new InboxController(inboxApi(client), { onUnauthorized }), [client]);
  const [inboxOpen, setInboxOpen] = useState(false);
  const [agents, setAgents] = useState<AgentProfile[]>([]);
  const [hosts, setHosts] = useState<ExecutorHost[]>([]);
  const [dialog, setDialog] = useState<{ taskId?: string; agentProfileId?: string; cwd?: string } | undefined>();
  const [sidebarOpen, setSidebarOpen] = useState(false);
  const [switcher, setSwitcher] = useState(false);
  const searchSessions = useMemo(() => (q: string) => tasks.search(q), [tasks]);
  useEffect(() => {
    // Ctrl-K / ⌘-K anywhere: go to a session.
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        setSwitcher((open) => !open);
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  const loadAgents = () => {
    // The hosts the form offers; without them (an older daemon) it still
    // offers standalone and detached.
    client
      .listExecutors()
      .then((r) => setHosts(r.hosts))
      .catch(() => setHosts([]));
    return client
      .listAgents()
      .then((r) => setAgents(r.agents))
      .catch((e) => {
        if ((e as { status?: number }).status === 401) onUnauthorized();
      });
  };

  useEffect(() => {
    tasks.start();
    void loadAgents();
    for (const id of load<string[]>(PANES_KEY, []).slice(0, 4)) {
      if (typeof id === 'string' && id) (panes.state.panes.length === 0 ? panes.show(id) : panes.openBeside(id));
    }
    return () => {
      tasks.dispose();
      panes.disposeAll();
    };
  }, [tasks, panes]);

  // The inbox reads GET /inbox again when the global stream says it may
  // have changed; the notifications hear the same stream.
  const agentsRef = useRef<Record<string, AgentProfile>>({});
  useEffect(() => {
    inbox.start(tasks);
    const nameOf = (id: string) => {
      const s = tasks.store.getState().sessions.get(id);
      return s ? sessionName(s, agentsRef.current[s.agentProfileId]?.displayName) : shortId(id);
    };
    const notifier = new InboxNotifier(tasks, browserNotifyEnv(), (ev) => noticeFor(ev, nameOf, settingsRef.current.lang), (id) => {
      panes.show(id);
      setSidebarOpen(false);
      setInboxOpen(false);
    });
    const stop = notifier.start();
    return () => {
      stop();
      inbox.dispose();
    };
  }, [inbox, tasks, panes]);

  useEffect(() => {
    const onVisibility = () => {
      for (const p of panes.state.panes) p.controller.setVisible(document.visibilityState !== 'hidden');
    };
    document.addEventListener('visibilitychange', onVisibility);
    return () => document.removeEventListener('visibilitychange', onVisibility);
  }, [panes]);

  const tasksState = useStore(tasks.store);
  const panesState = useStore(panes.store);
  const inboxState = useStore(inbox.store);
  const agentMap = useMemo(() => Object.fromEntries(agents.map((a) => [a.id, a])), [agents]);
  agentsRef.current = agentMap;
  const shown = new Set(panesState.panes.map((p) => p.sessionId));
  const activePane = panesState.panes.find((p) => p.id === panesState.activeId) ?? panesState.panes[0];

  const createSession = async (req: NewSessionRequest) => {
    // Without a task the daemon makes one, titled and in the directory, in
    // the same write as the session: a refused session leaves no empty task.
    let session;
    try {
      session = await client.createSession({
        agentProfileId: req.agentProfileId,
        cwd: req.cwd,
        ...(req.taskId ? { taskId: req.taskId } : {}),
        ...(req.taskTitle ? { title: req.taskTitle } : {}),
        ...(req.prompt ? { initialPrompt: [{ type: 'text' as const, text: req.prompt }] } : {}),
        ...(req.executor ? { executor: req.executor } : {}),
        ...(req.worktree ? { worktree: true } : {}),
      });
    } catch (e) {
      // The refusal's check updated what the daemon knows of the agent.
      if (errorCode(e) === AGENT_AUTH_REQUIRED) void loadAgents();
      throw e;
    }
    save(CWD_KEY, req.cwd);
    tasks.addSession(session);
    panes.show(session.id);
    setDialog(undefined);
    setSidebarOpen(false);
  };

  const startNewFrom = (from: { agentProfileId: string; cwd: string; taskId: string }, paneId: string) => {
    const agent = agentMap[from.agentProfileId];
    if (!agent?.available || !from.cwd) {
      setDialog(from);
      return;
    }
    client
      .createSession({ agentProfileId: from.agentProfileId, cwd: from.cwd, ...(from.taskId ? { taskId: from.taskId } : {}) })
      .then((s) => {
        tasks.addSession(s);
        panes.show(s.id, paneId);
      })
      .catch(() => setDialog(from));
  };

  // Rewind, fork and hand-off (docs/rewind.md): a new session opens beside
  // the one it came from.
  const branchApi: BranchApi = {
    rewind: (id, toTurn, dryRun) => client.session(id).rewind(toTurn, { dryRun }),
    undoRewind: (id) => client.session(id).undoRewind(),
    fork: async (id, atTurn, cwd) => {
      const s = await client.session(id).fork(cwd ? { atTurn, cwd } : { atTurn });
      tasks.addSession(s);
      panes.openBeside(s.id);
    },
    handoff: async (id, agentProfileId) => {
      const s = await client.session(id).handoff(agentProfileId);
      tasks.addSession(s);
      panes.openBeside(s.id);
    },
    open: (id) => (shown.has(id) ? panes.focus(panesState.panes.find((p) => p.sessionId === id)!.id) : panes.openBeside(id)),
    summary: (id) => tasksState.sessions.get(id),
    forksOf: (taskId, id) => forksOf(tasksState, taskId, id),
  };

  // The pane asked first (its ConfirmDialog).
  const endSession = (sessionId: string) => {
    client
      .session(sessionId)
      .close()
      .catch((e) => window.alert(errorText(e)));
  };

  return (
    <AgentsContext.Provider value={agentMap}>
      <WorkspaceApiContext.Provider value={workspaceApiFor}>
      <BranchApiContext.Provider value={branchApi}>
      <div class={`app${sidebarOpen ? ' app--sidebar' : ''}`}>
        <header class="topbar">
          <button type="button" class="btn btn--ghost btn--icon" aria-label={t('app.toggleSidebar')} aria-expanded={sidebarOpen} aria-controls="sidebar" onClick={() => setSidebarOpen(!sidebarOpen)} data-testid="sidebar-toggle">
            <IconMenu width="18" height="18" />
          </button>
          <Brand />
          <InboxButton state={inboxState} expanded={inboxOpen} onClick={() => setInboxOpen(true)} testId="inbox-button-top" />
          <button type="button" class="btn btn--primary btn--small" onClick={() => (void loadAgents(), setDialog({}))}>
            <IconPlus /> {t('app.newSession')}
          </button>
        </header>
        {sidebarOpen && <DrawerBackdrop label={t('drawer.close')} onClose={() => setSidebarOpen(false)} />}
        <aside class="sidebar" id="sidebar" data-testid="sidebar">
          <div class="sidebar__top">
            <Brand />
            <button type="button" class="btn btn--primary" onClick={() => (void loadAgents(), setDialog({}))} data-testid="new-session">
              <IconPlus /> {t('app.newSession')}
            </button>
          </div>
          <Sidebar
            tasks={tasksState}
            shown={shown}
            activeSessionId={activePane?.sessionId}
            onOpen={(id) => (panes.show(id), setSidebarOpen(false))}
            onOpenBeside={(id) => (panes.openBeside(id), setSidebarOpen(false))}
            onNew={(taskId) => (void loadAgents(), setDialog({ taskId }))}
            onUpdate={(id, change) => void tasks.updateSession(id, change).catch(() => {})}
            search={searchSessions}
            headExtra={<InboxButton state={inboxState} expanded={inboxOpen} onClick={() => setInboxOpen(true)} testId="inbox-button" />}
          />
          <details class="settings">
            <summary>{t('app.settings')}</summary>
            <label class="field field--inline">
              <span class="field__label">{t('app.language')}</span>
              <select value={settings.lang} onChange={(e) => setSettings({ ...settings, lang: (e.currentTarget as HTMLSelectElement).value as Lang })}>
                <option value="en">English</option>
                <option value="zh">中文</option>
              </select>
            </label>
            <label class="check">
              <input type="checkbox" checked={settings.autoResume} onChange={(e) => setSettings({ ...settings, autoResume: (e.currentTarget as HTMLInputElement).checked })} />
              <span>{t('app.autoResume')}</span>
            </label>
            <button type="button" class="btn btn--link" onClick={onSignOut}>
              {t('app.signOut')}
            </button>
          </details>
        </aside>
        <main class={`panes panes--${Math.min(panesState.panes.length, 4)}`} data-testid="panes">
          {panesState.panes.length === 0 && (
            <div class="panes__empty">
              <p>{t('app.openHint')}</p>
              <button type="button" class="btn btn--primary" onClick={() => (void loadAgents(), setDialog({}))}>
                <IconPlus /> {t('app.newSession')}
              </button>
            </div>
          )}
          {panesState.panes.map((p, i) => (
            <ChatPane
              key={p.id}
              controller={p.controller}
              shownSessionId={p.sessionId}
              isMain={i === 0}
              active={p.id === activePane?.id}
              onFocus={() => panes.focus(p.id)}
              onClose={panesState.panes.length > 1 || i > 0 ? () => panes.close(p.id) : undefined}
              onStartNew={(from) => startNewFrom(from, p.id)}
              onEndSession={() => endSession(p.sessionId)}
            />
          ))}
        </main>
        {inboxOpen && (
          <InboxDialog
            state={inboxState}
            notify={notifyControls}
            onAnswer={(item, optionId) => void inbox.answer(item, optionId)}
            onContinue={(item) => void inbox.continueTurn(item)}
            onCancel={(item) => void inbox.cancelTurn(item)}
            // The session in the active pane, its budget editor open.
            onRaiseBudget={(id) => (panes.show(id).controller.openBudgetEditor(), setSidebarOpen(false))}
            onOpen={(id) => (panes.show(id), setSidebarOpen(false))}
            onClose={() => setInboxOpen(false)}
          />
        )}
        {switcher && <QuickSwitcher tasks={tasksState} search={searchSessions} onOpen={(id) => panes.show(id)} onClose={() => setSwitcher(false)} />}
        {dialog && (
          <NewSessionDialog
            agents={agents}
            hosts={hosts}
            tasks={tasksState.taskOrder.map((id) => tasksState.tasks[id]!)}
            initial={dialog}
            defaultCwd={load<string>(CWD_KEY, '')}
            recentDirs={recentDirectories(tasksState.sessions.values())}
            onCreate={createSession}
            onClose={() => setDialog(undefined)}
          />
        )}
      </div>
      </BranchApiContext.Provider>
      </WorkspaceApiContext.Provider>
    </AgentsContext.Provider>
  );
}

/**
 * Behind the sidebar while it is open as a drawer (narrow windows only, by
 * CSS): a tap outside the drawer closes it, as does Esc.
 */
function DrawerBackdrop({ label, onClose }: { label: string; onClose: () => void }) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && onClose();
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [onClose]);
  // Not a button: the toggle and Esc are the keyboard's ways to close.
  return <div class="drawer-backdrop" title={label} onClick={onClose} data-testid="drawer-backdrop" />;
}

function Brand() {
  return (
    <div class="brand">
      <span class="brand__mark" aria-hidden="true">
        T
      </span>
      <span class="brand__name">Tether</span>
    </div>
  );
}
