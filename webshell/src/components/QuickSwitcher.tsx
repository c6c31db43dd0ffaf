import { useContext, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useT } from '../i18n';
import { ago } from '../lib/time';
import type { SessionSummary, TasksState } from '../state/tasks-state';
import { AgentsContext } from './ChatPane';
import { sessionName } from './Sidebar';

export interface QuickSwitcherProps {
  tasks: TasksState;
  search: (q: string) => Promise<SessionSummary[]>;
  onOpen: (sessionId: string) => void;
  onClose: () => void;
}

/**
 * Ctrl-K / ⌘-K: go to a session by typing. The sessions the sidebar holds
 * are filtered at once by name, agent and directory; the server's search
 * (titles and what ended turns said) adds the ones that only their
 * transcript matches. ↑↓ choose, Enter opens, Esc closes.
 */
export function QuickSwitcher({ tasks, search, onOpen, onClose }: QuickSwitcherProps) {
  const { t, lang } = useT();
  const agents = useContext(AgentsContext);
  const [q, setQ] = useState('');
  const [at, setAt] = useState(0);
  const [remote, setRemote] = useState<SessionSummary[]>([]);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  useEffect(() => {
    const query = q.trim();
    setRemote([]);
    if (query.length < 2) return;
    let live = true;
    const timer = setTimeout(() => {
      search(query).then((l) => live && setRemote(l), () => {});
    }, 150);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [q, search]);
  const name = (s: SessionSummary) => sessionName(s, agents[s.agentProfileId]?.displayName);
  const list = useMemo(() => {
    const words = q.toLowerCase().split(/\s+/).filter(Boolean);
    const local = [...tasks.sessions.values()]
      .filter((s) => !s.archived)
      .filter((s) => words.every((w) => `${name(s)} ${s.agentProfileId} ${s.cwd}`.toLowerCase().includes(w)))
      .sort((a, b) => (b.lastActivityAt ?? b.createdAt ?? '').localeCompare(a.lastActivityAt ?? a.createdAt ?? ''));
    const seen = new Set(local.map((s) => s.id));
    return [...local, ...remote.filter((s) => !seen.has(s.id))].slice(0, 30);
  }, [q, tasks, remote, agents]);
  const pick = (s: SessionSummary | undefined) => {
    if (!s) return;
    onOpen(s.id);
    onClose();
  };
  return (
    <div class="modal" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div class="modal__box switcher" role="dialog" aria-modal="true" aria-label={t('find.switcher')} data-testid="quick-switcher">
        <input
          ref={input}
          class="input switcher__input"
          type="search"
          value={q}
          placeholder={t('find.switcher')}
          aria-label={t('find.switcher')}
          aria-controls="switcher-list"
          aria-activedescendant={list[at] ? `switcher-${list[at]!.id}` : undefined}
          title={t('find.switcherHint')}
          onInput={(e) => (setQ((e.target as HTMLInputElement).value), setAt(0))}
          onKeyDown={(e) => {
            if (e.key === 'ArrowDown') (e.preventDefault(), setAt((i) => Math.min(i + 1, list.length - 1)));
            else if (e.key === 'ArrowUp') (e.preventDefault(), setAt((i) => Math.max(i - 1, 0)));
            else if (e.key === 'Enter') (e.preventDefault(), pick(list[at]));
            else if (e.key === 'Escape') (e.preventDefault(), onClose());
          }}
          data-testid="switcher-input"
        />
        <ul class="switcher__list" id="switcher-list" role="listbox" aria-label={t('find.switcher')}>
          {list.map((s, i) => (
            <li
              key={s.id}
              id={`switcher-${s.id}`}
              role="option"
              aria-selected={i === at}
              class={`switcher__item${i === at ? ' switcher__item--at' : ''}`}
              onMouseEnter={() => setAt(i)}
              onClick={() => pick(s)}
              data-testid="switcher-item"
              data-session-id={s.id}
            >
              <span class="switcher__name">{name(s)}</span>
              <span class="switcher__meta">
                {s.cwd} · {ago(s.lastActivityAt, lang)}
              </span>
            </li>
          ))}
        </ul>
        <p class="muted switcher__hint">{t('find.switcherHint')}</p>
      </div>
    </div>
  );
}
