import type { AvailableCommand } from '../state/types';

/**
 * The commands a composer text offers: while the text is "/" plus a word
 * (no space yet), the agent's commands whose name starts with that word,
 * then those that contain it. Anything else offers none.
 */
export function slashMatches(text: string, commands: AvailableCommand[]): AvailableCommand[] {
  const m = /^\/(\S*)$/.exec(text);
  if (!m) return [];
  const q = m[1]!.toLowerCase();
  const starts = commands.filter((c) => c.name.toLowerCase().startsWith(q));
  const contains = commands.filter((c) => !c.name.toLowerCase().startsWith(q) && c.name.toLowerCase().includes(q));
  return [...starts, ...contains];
}

export interface SlashMenuProps {
  id: string;
  matches: AvailableCommand[];
  selected: number;
  onPick: (c: AvailableCommand) => void;
}

/** The list under the composer; the composer owns the keys (arrows, Enter, Tab, Esc). */
export function SlashMenu({ id, matches, selected, onPick }: SlashMenuProps) {
  return (
    <ul id={id} class="slash-menu" role="listbox" data-testid="slash-menu">
      {matches.map((c, i) => (
        <li
          key={c.name}
          id={`${id}-${i}`}
          role="option"
          aria-selected={i === selected ? 'true' : 'false'}
          class={`slash-menu__item${i === selected ? ' slash-menu__item--selected' : ''}`}
          // mousedown, not click: the textarea keeps its focus.
          onMouseDown={(e) => {
            e.preventDefault();
            onPick(c);
          }}
        >
          <span class="mono">/{c.name}</span>
          {c.input?.hint && <span class="slash-menu__hint mono"> {c.input.hint}</span>}
          <span class="slash-menu__desc muted">{c.description}</span>
        </li>
      ))}
    </ul>
  );
}
