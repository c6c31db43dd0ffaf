import { useContext } from 'preact/hooks';
import { useT } from '../i18n';
import { shortId } from '../lib/ids';
import { sessionsOfTask, type SessionSummary, type TasksState } from '../state/tasks-state';
import { AgentsContext } from './ChatPane';
import { IconPlus, IconSplit } from './Icons';
import { ConnectionBadge, SessionStateBadge, TaskStateBadge, connView } from './Badges';

export interface SidebarProps {
  tasks: TasksState;
  shown: Set<string>;
  activeSessionId?: string;
  onOpen: (sessionId: string) => void;
  onOpenBeside: (sessionId: string) => void;
  onNew: (taskId?: string) => void;
}

function sessionName(s: SessionSummary, agentName: string | undefined): string {
  return s.title || `${agentName ?? s.agentProfileId} · ${shortId(s.id)}`;
}

export function Sidebar({ tasks, shown, activeSessionId, onOpen, onOpenBeside, onNew }: SidebarProps) {
  const { t } = useT();
  const agents = useContext(AgentsContext);
  const orphanIds = [...tasks.sessions.values()].filter((s) => !tasks.tasks[s.taskId]);
  return (
    <nav class="tasks" aria-label={t('app.sessions')}>
      <div class="tasks__head">
        <h2>{t('app.sessions')}</h2>
        <ConnectionBadge view={connView(tasks.connection, tasks.loaded)} compact />
      </div>
      {tasks.error && (
        <p class="notice notice--error" role="alert">
          {tasks.error}
        </p>
      )}
      {tasks.loaded && tasks.taskOrder.length === 0 && orphanIds.length === 0 && <p class="muted tasks__empty">{t('app.noTasks')}</p>}
      <ul class="tasks__list">
        {tasks.taskOrder.map((taskId) => {
          const task = tasks.tasks[taskId]!;
          const sessions = sessionsOfTask(tasks, taskId);
          const title = task.title || t('app.untitledTask');
          return (
            <li key={taskId} class="task" data-testid="task" data-task-id={taskId}>
              <div class="task__head">
                <span class="task__title" title={task.workspace}>
                  {title}
                </span>
                <TaskStateBadge state={task.state} />
                <button type="button" class="btn btn--ghost btn--icon btn--small" onClick={() => onNew(taskId)} aria-label={`${t('app.newSession')}: ${title}`} title={t('app.newSession')}>
                  <IconPlus />
                </button>
              </div>
              <ul class="task__sessions" aria-label={t('app.sessionsOf', { task: title })}>
                {sessions.map((s) => (
                  <SessionRow key={s.id} s={s} name={sessionName(s, agents[s.agentProfileId]?.displayName)} shown={shown.has(s.id)} active={activeSessionId === s.id} onOpen={onOpen} onOpenBeside={onOpenBeside} />
                ))}
              </ul>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

function SessionRow({
  s,
  name,
  shown,
  active,
  onOpen,
  onOpenBeside,
}: {
  s: SessionSummary;
  name: string;
  shown: boolean;
  active: boolean;
  onOpen: (id: string) => void;
  onOpenBeside: (id: string) => void;
}) {
  const { t } = useT();
  const interrupted = s.recoveryKind === 'interrupted_prompt' || s.recoveryKind === 'interrupted_turn';
  return (
    <li class={`srow${shown ? ' srow--shown' : ''}${active ? ' srow--active' : ''}`} data-testid="session-row" data-session-id={s.id}>
      <button type="button" class="srow__open" onClick={() => onOpen(s.id)} aria-label={t('app.open', { name })} aria-current={active ? 'true' : undefined}>
        <span class="srow__name">{name}</span>
        <span class="srow__meta">
          <SessionStateBadge state={s.state} />
          {interrupted && <span class="badge badge--warn badge--small">{t('app.interrupted')}</span>}
        </span>
      </button>
      <button type="button" class="btn btn--ghost btn--icon btn--small srow__beside" onClick={() => onOpenBeside(s.id)} aria-label={t('app.openBeside', { name })} title={t('app.openBeside', { name })}>
        <IconSplit />
      </button>
    </li>
  );
}
