import { useT } from '../i18n';
import type { WorkspaceEntry } from '../state/types';

export interface MentionMenuProps {
  id: string;
  /** The directory listed: "" for the session's directory. */
  dir: string;
  matches: WorkspaceEntry[];
  selected: number;
  /** The listing is on its way, or failed. */
  status: 'ready' | 'loading' | 'error';
  onPick: (e: WorkspaceEntry) => void;
}

/** The `@` list under the composer: the workspace's files; the composer owns the keys. */
export function MentionMenu({ id, dir, matches, selected, status, onPick }: MentionMenuProps) {
  const { t } = useT();
  if (status !== 'ready' || matches.length === 0) {
    return (
      <p class="slash-menu slash-menu--note muted" data-testid="mention-menu" role="status">
        {status === 'loading' ? t('composer.mentionLoading') : status === 'error' ? t('composer.mentionError') : t('composer.mentionNone', { dir: dir || '.' })}
      </p>
    );
  }
  return (
    <ul id={id} class="slash-menu" role="listbox" aria-label={t('composer.mentionLabel')} data-testid="mention-menu">
      {matches.map((e, i) => (
        <li
          key={e.path}
          id={`${id}-${i}`}
          role="option"
          aria-selected={i === selected ? 'true' : 'false'}
          class={`slash-menu__item${i === selected ? ' slash-menu__item--selected' : ''}`}
          onMouseDown={(ev) => {
            ev.preventDefault(); // the textarea keeps its focus
            onPick(e);
          }}
        >
          <span class="mono">
            {e.path}
            {e.type === 'dir' ? '/' : ''}
          </span>
        </li>
      ))}
    </ul>
  );
}
