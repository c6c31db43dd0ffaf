import { useEffect, useRef, useState } from 'preact/hooks';
import { useT, type MessageKey } from '../i18n';
import { errorCode, errorText } from '../lib/errors';
import type { AgentProfile, AuthMethod, ExecutorHost, Task } from '../state/types';
import { AGENT_AUTH_REQUIRED, AuthMethodList } from './AuthBanner';

export interface NewSessionRequest {
  agentProfileId: string;
  cwd: string;
  taskId?: string;
  taskTitle?: string;
  prompt?: string;
  /** standalone, detached or a remote host's name; absent: the daemon's default. */
  executor?: string;
  /** Isolate the session in a git worktree of the directory's repository. */
  worktree?: boolean;
}

/**
 * The directories of the sessions the daemon lists, newest first, each
 * once: where the user is likely to work again.
 */
export function recentDirectories(sessions: Iterable<{ cwd: string; createdAt?: string }>, limit = 5): string[] {
  const newest = [...sessions].filter((s) => s.cwd).sort((a, b) => (b.createdAt ?? '').localeCompare(a.createdAt ?? ''));
  return [...new Set(newest.map((s) => s.cwd))].slice(0, limit);
}

/** The directories tetherd refuses unless it runs with --allow-cwd (SessionCreate.cwd). */
const SYSTEM_DIRS = ['/', '/etc', '/usr', '/var', '/bin', '/sbin', '/lib', '/boot', '/root'];
const SYSTEM_TREES = ['/dev', '/proc', '/sys'];

/**
 * What can be said of a path as it is typed, without asking the daemon
 * (the API checks a directory only when a session is created there):
 * `relative` blocks (tetherd wants an absolute path and expands no ~),
 * `system` warns (refused unless tetherd runs with --allow-cwd).
 */
export function cwdCheck(path: string): 'relative' | 'system' | undefined {
  const p = path.trim();
  if (!p) return undefined;
  if (!p.startsWith('/')) return 'relative';
  const clean = p.length > 1 ? p.replace(/\/+$/, '') : p;
  if (SYSTEM_DIRS.includes(clean) || SYSTEM_TREES.some((d) => clean === d || clean.startsWith(`${d}/`))) return 'system';
  return undefined;
}

/** The daemon's refusals that are about the directory: said under its field. */
const CWD_CODES = new Set(['invalid_cwd', 'cwd_refused', 'workspace_not_a_repository', 'workspace_revision_not_found']);

export interface NewSessionDialogProps {
  agents: AgentProfile[];
  /** The executor hosts of GET /executors (the remote ones are offered). */
  hosts?: ExecutorHost[];
  tasks: Task[];
  initial?: { taskId?: string; agentProfileId?: string; cwd?: string };
  defaultCwd?: string;
  /** Directories of earlier sessions, newest first (recentDirectories). */
  recentDirs?: string[];
  onCreate: (req: NewSessionRequest) => Promise<void>;
  onClose: () => void;
}

export function NewSessionDialog({ agents, hosts = [], tasks, initial, defaultCwd, recentDirs = [], onCreate, onClose }: NewSessionDialogProps) {
  const { t } = useT();
  const firstAvailable = agents.find((a) => a.available)?.id ?? '';
  const [taskId, setTaskId] = useState(initial?.taskId ?? '');
  const task = tasks.find((x) => x.id === taskId);
  const [taskTitle, setTaskTitle] = useState('');
  const [agentId, setAgentId] = useState(
    initial?.agentProfileId && agents.some((a) => a.id === initial.agentProfileId && a.available) ? initial.agentProfileId : firstAvailable,
  );
  const [cwd, setCwd] = useState(initial?.cwd || task?.workspace || defaultCwd || recentDirs[0] || '');
  const [prompt, setPrompt] = useState('');
  const [worktree, setWorktree] = useState(false);
  // The daemon's refusal of the directory, for the directory it refused.
  const [cwdError, setCwdError] = useState<{ cwd: string; text: string } | undefined>();
  const check = cwdCheck(cwd);
  const refused = cwdError && cwdError.cwd === cwd ? cwdError.text : undefined;
  // Available agents first; the others folded, each with why.
  const usable = agents.filter((a) => a.available);
  const unusable = agents.filter((a) => !a.available);
  // '' sends no executor: the agent profile's, else the daemon's default.
  const [executor, setExecutor] = useState('');
  const remotes = hosts.filter((h) => h.runtime === 'remote');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  // The methods of a refusal for want of credentials (agent_auth_required).
  const [errorMethods, setErrorMethods] = useState<AuthMethod[]>([]);
  // What the daemon last saw of the chosen agent's credentials (GET /agents).
  const credentials = agents.find((a) => a.id === agentId)?.credentials;
  const dialogRef = useRef<HTMLDivElement>(null);
  const cwdRef = useRef<HTMLInputElement>(null);
  const promptRef = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    const prev = document.activeElement as HTMLElement | null;
    // The directory when it is still to be given, else the first message;
    // the dialog opens at its top, whatever is focused.
    (cwd ? promptRef.current : cwdRef.current)?.focus({ preventScroll: true });
    dialogRef.current?.scrollTo?.({ top: 0 });
    return () => prev?.focus?.();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    if (task?.workspace && !cwd) setCwd(task.workspace);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [taskId]);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!agentId || !cwd.trim() || check === 'relative' || busy) return;
    setBusy(true);
    setError(undefined);
    setCwdError(undefined);
    setErrorMethods([]);
    try {
      await onCreate({
        agentProfileId: agentId,
        cwd: cwd.trim(),
        taskId: taskId || undefined,
        taskTitle: taskId ? undefined : taskTitle.trim() || undefined,
        prompt: prompt.trim() || undefined,
        executor: executor || undefined,
        worktree: worktree || undefined,
      });
    } catch (err) {
      setBusy(false);
      if (CWD_CODES.has(errorCode(err) ?? '')) {
        setCwdError({ cwd, text: errorText(err) });
        cwdRef.current?.focus();
        return;
      }
      setError(errorText(err));
      const methods = (err as { body?: { authMethods?: unknown } } | null)?.body?.authMethods;
      if (errorCode(err) === AGENT_AUTH_REQUIRED && Array.isArray(methods)) setErrorMethods(methods as AuthMethod[]);
    }
  };

  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      onClose();
    }
    if (e.key === 'Tab') {
      // Keep focus inside the dialog.
      const f = [...(dialogRef.current?.querySelectorAll<HTMLElement>('button, input, select, textarea') ?? [])].filter((x) => !x.hasAttribute('disabled'));
      if (f.length === 0) return;
      const first = f[0]!;
      const last = f[f.length - 1]!;
      if (e.shiftKey && document.activeElement === first) {
        e.preventDefault();
        last.focus();
      } else if (!e.shiftKey && document.activeElement === last) {
        e.preventDefault();
        first.focus();
      }
    }
  };

  const agentOption = (a: AgentProfile) => (
    <label key={a.id} class={`agent${a.available ? '' : ' agent--unavailable'}${agentId === a.id ? ' agent--selected' : ''}`} data-testid="agent-option" data-agent-id={a.id}>
      <input type="radio" name="agent" value={a.id} checked={agentId === a.id} disabled={!a.available} onChange={() => setAgentId(a.id)} />
      <span class="agent__body">
        <span class="agent__name">{a.displayName}</span>
        <span class="agent__meta">
          {a.available ? (a.nativeSessionResume || a.historyContextInjection ? t('new.resumes') : t('new.noResume')) : t('new.unavailable', { reason: a.unavailableReason ?? '' })}
          {a.available && a.credentials?.status === 'required' && (
            <span class="agent__creds" data-testid="agent-needs-credentials">
              {' · '}
              {t('new.needsCredentials')}
            </span>
          )}
        </span>
      </span>
    </label>
  );
  const cwdNote = refused ?? (check === 'relative' ? t('new.cwdRelative') : check === 'system' ? t('new.cwdSystem') : recentDirs.includes(cwd.trim()) ? t('new.cwdKnown') : t('new.cwdHint'));
  const cwdBad = !!refused || check === 'relative';

  return (
    <div class="modal" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div class="modal__box" role="dialog" aria-modal="true" aria-labelledby="new-session-title" ref={dialogRef} onKeyDown={onKeyDown} data-testid="new-session-dialog">
        <form onSubmit={submit}>
          <h2 id="new-session-title">{t('new.title')}</h2>
          <fieldset class="field agents">
            <legend class="field__label">{t('new.agent')}</legend>
            {agents.length === 0 && <p class="muted">{t('new.noAgents')}</p>}
            {usable.length === 0 && agents.length > 0 && <p class="muted">{t('new.noneAvailable')}</p>}
            {usable.map(agentOption)}
            {unusable.length > 0 && (
              <details class="agents__unavailable" data-testid="agents-unavailable">
                <summary>{t('new.unavailableAgents', { n: unusable.length })}</summary>
                <div class="agents">{unusable.map(agentOption)}</div>
              </details>
            )}
          </fieldset>
          {credentials?.status === 'required' && (
            <div class="notice notice--warn notice--block" role="status" data-testid="agent-credentials">
              <p>
                <strong>{t(credentials.stage === 'prompt' ? 'new.credentialsPrompt' : 'new.credentialsStart')}</strong>
              </p>
              {credentials.message && (
                <p class="banner__note" data-testid="agent-credentials-message">
                  {credentials.message}
                </p>
              )}
              <AuthMethodList methods={credentials.authMethods ?? []} />
            </div>
          )}
          <div class="field">
            <label class="field__label" for="new-session-cwd">
              {t('new.cwd')}
            </label>
            <input
              id="new-session-cwd"
              ref={cwdRef}
              type="text"
              name="cwd"
              class="mono"
              value={cwd}
              required
              spellcheck={false}
              autoComplete="off"
              placeholder="/home/you/project"
              aria-invalid={cwdBad}
              aria-describedby="cwd-hint"
              onInput={(e) => setCwd((e.currentTarget as HTMLInputElement).value)}
            />
            <span id="cwd-hint" class={`field__hint${cwdBad ? ' field__hint--bad' : check === 'system' ? ' field__hint--warn' : ''}`} data-testid="cwd-check" data-check={refused ? 'refused' : (check ?? 'ok')} aria-live="polite">
              {cwdNote}
            </span>
            {recentDirs.length > 0 && (
              <div class="recent" role="group" aria-label={t('new.recent')} data-testid="recent-dirs">
                <span class="field__hint">{t('new.recent')}:</span>
                {recentDirs.map((d) => (
                  <button key={d} type="button" class={`chip mono${d === cwd.trim() ? ' chip--on' : ''}`} aria-pressed={d === cwd.trim()} title={d} onClick={() => setCwd(d)}>
                    {d}
                  </button>
                ))}
              </div>
            )}
          </div>
          <label class="check">
            <input type="checkbox" name="worktree" checked={worktree} onChange={(e) => setWorktree((e.currentTarget as HTMLInputElement).checked)} aria-describedby="worktree-hint" />
            <span>{t('new.worktree')}</span>
          </label>
          <span id="worktree-hint" class="field__hint check__hint">
            {t('new.worktreeHint')}
          </span>
          <label class="field">
            <span class="field__label">{t('new.prompt')}</span>
            <textarea ref={promptRef} name="prompt" rows={3} value={prompt} placeholder={t('new.promptPlaceholder')} onInput={(e) => setPrompt((e.currentTarget as HTMLTextAreaElement).value)} />
          </label>
          <label class="field">
            <span class="field__label">{t('new.task')}</span>
            <select value={taskId} onChange={(e) => setTaskId((e.currentTarget as HTMLSelectElement).value)}>
              <option value="">{t('new.newTask')}</option>
              {tasks.map((x) => (
                <option key={x.id} value={x.id}>
                  {x.title || t('app.untitledTask')}
                </option>
              ))}
            </select>
          </label>
          {!taskId && (
            <label class="field">
              <span class="field__label">{t('new.taskTitle')}</span>
              <input type="text" value={taskTitle} maxLength={500} placeholder={t('new.taskTitlePlaceholder')} onInput={(e) => setTaskTitle((e.currentTarget as HTMLInputElement).value)} />
            </label>
          )}
          <label class="field">
            <span class="field__label">{t('new.executor')}</span>
            <select name="executor" value={executor} onChange={(e) => setExecutor((e.currentTarget as HTMLSelectElement).value)} aria-describedby="executor-hint">
              <option value="">{t('new.executorDefault')}</option>
              <option value="standalone">{t('new.executorStandalone')}</option>
              <option value="detached">{t('new.executorDetached')}</option>
              {remotes.map((h) => (
                <option key={h.name} value={h.name}>
                  {h.state === 'connected' ? t('new.executorRemote', { name: h.name }) : t('new.executorRemoteState', { name: h.name, state: t(`new.hostState.${h.state}` as MessageKey) })}
                </option>
              ))}
            </select>
            <span id="executor-hint" class="field__hint">
              {t('new.executorHint')}
            </span>
          </label>
          {error && (
            <div class="notice notice--error notice--block" role="alert" data-testid="create-error">
              <p>{error}</p>
              <AuthMethodList methods={errorMethods} />
            </div>
          )}
          <div class="modal__actions">
            <button type="button" class="btn" onClick={onClose}>
              {t('new.cancel')}
            </button>
            <button type="submit" class="btn btn--primary" disabled={busy || !agentId || !cwd.trim() || check === 'relative'}>
              {busy ? t('new.creating') : t('new.create')}
            </button>
          </div>
        </form>
      </div>
    </div>
  );
}
