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
}

export interface NewSessionDialogProps {
  agents: AgentProfile[];
  /** The executor hosts of GET /executors (the remote ones are offered). */
  hosts?: ExecutorHost[];
  tasks: Task[];
  initial?: { taskId?: string; agentProfileId?: string; cwd?: string };
  defaultCwd?: string;
  onCreate: (req: NewSessionRequest) => Promise<void>;
  onClose: () => void;
}

export function NewSessionDialog({ agents, hosts = [], tasks, initial, defaultCwd, onCreate, onClose }: NewSessionDialogProps) {
  const { t } = useT();
  const firstAvailable = agents.find((a) => a.available)?.id ?? '';
  const [taskId, setTaskId] = useState(initial?.taskId ?? '');
  const task = tasks.find((x) => x.id === taskId);
  const [taskTitle, setTaskTitle] = useState('');
  const [agentId, setAgentId] = useState(
    initial?.agentProfileId && agents.some((a) => a.id === initial.agentProfileId && a.available) ? initial.agentProfileId : firstAvailable,
  );
  const [cwd, setCwd] = useState(initial?.cwd || task?.workspace || defaultCwd || '');
  const [prompt, setPrompt] = useState('');
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

  useEffect(() => {
    const prev = document.activeElement as HTMLElement | null;
    (cwd ? dialogRef.current?.querySelector<HTMLElement>('input[name=agent]:checked') : cwdRef.current)?.focus();
    return () => prev?.focus?.();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    if (task?.workspace && !cwd) setCwd(task.workspace);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [taskId]);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!agentId || !cwd.trim() || busy) return;
    setBusy(true);
    setError(undefined);
    setErrorMethods([]);
    try {
      await onCreate({
        agentProfileId: agentId,
        cwd: cwd.trim(),
        taskId: taskId || undefined,
        taskTitle: taskId ? undefined : taskTitle.trim() || undefined,
        prompt: prompt.trim() || undefined,
        executor: executor || undefined,
      });
    } catch (err) {
      setError(errorText(err));
      const methods = (err as { body?: { authMethods?: unknown } } | null)?.body?.authMethods;
      if (errorCode(err) === AGENT_AUTH_REQUIRED && Array.isArray(methods)) setErrorMethods(methods as AuthMethod[]);
      setBusy(false);
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

  return (
    <div class="modal" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div class="modal__box" role="dialog" aria-modal="true" aria-labelledby="new-session-title" ref={dialogRef} onKeyDown={onKeyDown}>
        <form onSubmit={submit}>
          <h2 id="new-session-title">{t('new.title')}</h2>
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
          <fieldset class="field agents">
            <legend class="field__label">{t('new.agent')}</legend>
            {agents.length === 0 && <p class="muted">{t('new.noAgents')}</p>}
            {agents.map((a) => (
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
            ))}
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
          <label class="field">
            <span class="field__label">{t('new.cwd')}</span>
            <input ref={cwdRef} type="text" name="cwd" class="mono" value={cwd} required spellcheck={false} autoComplete="off" placeholder="/home/you/project" onInput={(e) => setCwd((e.currentTarget as HTMLInputElement).value)} aria-describedby="cwd-hint" />
            <span id="cwd-hint" class="field__hint">
              {t('new.cwdHint')}
            </span>
          </label>
          <label class="field">
            <span class="field__label">{t('new.prompt')}</span>
            <textarea rows={3} value={prompt} onInput={(e) => setPrompt((e.currentTarget as HTMLTextAreaElement).value)} />
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
            <button type="submit" class="btn btn--primary" disabled={busy || !agentId || !cwd.trim()}>
              {busy ? t('new.creating') : t('new.create')}
            </button>
          </div>
        </form>
      </div>
    </div>
  );
}
