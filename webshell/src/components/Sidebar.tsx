import type { ComponentChildren } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import { useT } from '../i18n';
import { shortId } from '../lib/ids';
import { ago } from '../lib/time';
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
  /** Renames a session (its title) or archives it / brings it back. */
  onUpdate: (sessionId: string, change: { title?: string; archived?: boolean }) => void;
  /** The server's search: sessions whose title or ended turns hold every word of q. */
  search: (q: string) => Promise<SessionSummary[]>;
  /** Shown in the list's header, before the connection (the inbox's button). */
  headExtra?: ComponentChildren;
}

/** What a session is called: its title, else its agent and short id. */
export function sessionName(s: SessionSummary, agentName: string | undefined): string {
  return s.title || `${agentName ?? s.agentProfileId} · ${shortId(s.id)}`;
}

export function Sidebar({ tasks, shown, activeSessionId, onOpen, onOpenBeside, onNew, onUpdate, search, headExtra }: SidebarProps) {
  const { t } = useT();
  const agents = useContext(AgentsContext);
  const orphanIds = [...tasks.sessions.values()].filter((s) => !tasks.tasks[s.taskId]);
  const [q, setQ] = useState('');
  const found = useSearch(q, search);
  const row = (s: SessionSummary) => (
    <SessionRow key={s.id} s={s} name={sessionName(s, agents[s.agentProfileId]?.displayName)} shown={shown.has(s.id)} active={activeSessionId === s.id} onOpen={onOpen} onOpenBeside={onOpenBeside} onUpdate={onUpdate} />
  );
  return (
    <nav class="tasks" aria-label={t('app.sessions')}>
      <div class="tasks__head">
        <h2>{t('app.sessions')}</h2>
        <span class="tasks__head-end">
          {headExtra}
          <ConnectionBadge view={connView(tasks.connection, tasks.loaded)} compact />
        </span>
      </div>
      <input
        type="search"
        class="input tasks__search"
        placeholder={t('find.search')}
        title={t('find.searchHint')}
        aria-label={t('find.search')}
        value={q}
        onInput={(e) => setQ((e.target as HTMLInputElement).value)}
        data-testid="session-search"
      />
      {q.trim() !== '' && (
        <section aria-label={t('find.results', { q: q.trim() })} data-testid="search-results">
          {found.error && <p class="notice notice--error" role="alert">{found.error}</p>}
          {found.done && found.list.length === 0 && !found.error && <p class="muted tasks__empty">{t('find.noResults', { q: q.trim() })}</p>}
          <ul class="task__sessions">{found.list.map((s) => row(tasks.sessions.get(s.id) ?? s))}</ul>
        </section>
      )}
      {tasks.error && (
        <p class="notice notice--error" role="alert">
          {tasks.error}
        </p>
      )}
      {tasks.loaded && tasks.taskOrder.length === 0 && orphanIds.length === 0 && <p class="muted tasks__empty">{t('app.noTasks')}</p>}
      <ul class="tasks__list" hidden={q.trim() !== ''}>
        {tasks.taskOrder.map((taskId) => {
          const task = tasks.tasks[taskId]!;
          const sessions = sessionsOfTask(tasks, taskId);
          // A task whose sessions are all archived is put away with them.
          if (sessions.length === 0 && tasks.sessions.ofTask(taskId).length > 0) return null;
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
                {sessions.map(row)}
              </ul>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

/** The server's search for q, debounced; the latest answer wins. */
function useSearch(q: string, search: (q: string) => Promise<SessionSummary[]>) {
  const [out, setOut] = useState<{ list: SessionSummary[]; done: boolean; error?: string }>({ list: [], done: false });
  useEffect(() => {
    const query = q.trim();
    if (!query) return;
    let live = true;
    setOut((o) => ({ ...o, done: false }));
    const timer = setTimeout(() => {
      search(query).then(
        (list) => live && setOut({ list, done: true }),
        (e: unknown) => live && setOut({ list: [], done: true, error: String((e as Error)?.message ?? e) }),
      );
    }, 200);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [q, search]);
  return out;
}

function SessionRow({
  s,
  name,
  shown,
  active,
  onOpen,
  onOpenBeside,
  onUpdate,
}: {
  s: SessionSummary;
  name: string;
  shown: boolean;
  active: boolean;
  onOpen: (id: string) => void;
  onOpenBeside: (id: string) => void;
  onUpdate: (id: string, change: { title?: string; archived?: boolean }) => void;
}) {
  const { t, lang } = useT();
  const [editing, setEditing] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (editing) input.current?.select();
  }, [editing]);
  const interrupted = s.recoveryKind === 'interrupted_prompt' || s.recoveryKind === 'interrupted_turn';
  const when = ago(s.lastActivityAt, lang);
  if (editing) {
    const done = (save: boolean) => {
      const title = input.current?.value.trim() ?? '';
      setEditing(false);
      if (save && title && title !== s.title) onUpdate(s.id, { title });
    };
    return (
      <li class="srow srow--editing" data-testid="session-row" data-session-id={s.id}>
        <input
          ref={input}
          class="input srow__rename"
          defaultValue={s.title ?? ''}
          maxLength={200}
          aria-label={t('find.renameLabel', { name })}
          onKeyDown={(e) => {
            if (e.key === 'Enter') done(true);
            if (e.key === 'Escape') done(false);
          }}
          onBlur={() => done(true)}
          data-testid="rename-input"
        />
      </li>
    );
  }
  return (
    <li class={`srow${shown ? ' srow--shown' : ''}${active ? ' srow--active' : ''}${s.archived ? ' srow--archived' : ''}`} data-testid="session-row" data-session-id={s.id}>
      {/* Named by what it shows (title, state, time): a label of its own would hide that from screen readers. */}
      <button type="button" class="srow__open" onClick={() => onOpen(s.id)} title={t('app.open', { name })} aria-current={active ? 'true' : undefined}>
        <span class="srow__name">{name}</span>
        <span class="srow__meta">
          <SessionStateBadge state={s.state} />
          {interrupted && <span class="badge badge--warn badge--small">{t(s.recoveryReason === 'budget_exceeded' ? 'inbox.kind.budget_exceeded' : 'app.interrupted')}</span>}
          {s.archived && <span class="badge badge--small">{t('find.archived')}</span>}
          {when && (
            <time class="srow__time" dateTime={s.lastActivityAt} title={s.lastActivityAt}>
              {when}
            </time>
          )}
        </span>
      </button>
      <button type="button" class="btn btn--ghost btn--icon btn--small srow__act" onClick={() => setEditing(true)} aria-label={t('find.rename', { name })} title={t('find.rename', { name })} data-testid="rename">
        ✎
      </button>
      <button
        type="button"
        class="btn btn--ghost btn--icon btn--small srow__act"
        onClick={() => onUpdate(s.id, { archived: !s.archived })}
        aria-label={t(s.archived ? 'find.unarchive' : 'find.archive', { name })}
        title={t(s.archived ? 'find.unarchive' : 'find.archive', { name })}
        data-testid="archive"
      >
        {s.archived ? '↥' : '⤓'}
      </button>
      <button type="button" class="btn btn--ghost btn--icon btn--small srow__beside" onClick={() => onOpenBeside(s.id)} aria-label={t('app.openBeside', { name })} title={t('app.openBeside', { name })}>
        <IconSplit />
      </button>
    </li>
  );
}
