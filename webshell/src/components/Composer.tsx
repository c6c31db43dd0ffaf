import { useEffect, useRef, useState } from 'preact/hooks';
import { useT } from '../i18n';
import { Spinner } from './Badges';
import { IconStop } from './Icons';
import { SessionOptions } from './SessionOptions';
import { SlashMenu, slashMatches } from './SlashMenu';
import type { AvailableCommand, SessionOptionsView } from '../state/types';

export interface ComposerProps {
  sessionId: string;
  /** The agent is starting: typing is allowed, sending is not. */
  starting: boolean;
  readOnly: boolean;
  busy: boolean;
  cancelling: boolean;
  autoFocus?: boolean;
  onSend: (text: string) => void;
  onCancel: () => void;
  /** The agent's slash commands: typing "/" offers them. */
  commands?: AvailableCommand[];
  /** The agent's modes and config options, with their pickers. */
  options?: SessionOptionsView;
  onSetMode?: (modeId: string) => void;
  onSetConfig?: (optionId: string, value: string | boolean) => void;
}

/**
 * Enter sends, Shift+Enter inserts a newline, Esc cancels the running turn.
 * "/" opens the agent's commands: arrows move, Enter or Tab picks, Esc closes;
 * Enter on a command typed in full sends it.
 */
export function Composer(props: ComposerProps) {
  const { sessionId, starting, readOnly, busy, cancelling, autoFocus, onSend, onCancel } = props;
  const { t } = useT();
  const [text, setText] = useState('');
  const ref = useRef<HTMLTextAreaElement>(null);
  // The slash menu: which entry is selected, and the text it was closed at (Esc).
  const [selected, setSelected] = useState(0);
  const [dismissedAt, setDismissedAt] = useState<string | null>(null);
  const matches = dismissedAt === text ? [] : slashMatches(text, props.commands ?? []);
  const menuOpen = matches.length > 0;
  const menuId = `slash-${sessionId}`;
  const pick = (c: AvailableCommand) => {
    setText(`/${c.name} `);
    setSelected(0);
    ref.current?.focus();
  };
  useEffect(() => {
    // Focus when a session is opened in the active pane, not on every click.
    if (autoFocus) ref.current?.focus();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [sessionId]);
  useEffect(() => {
    // Grow with the text, up to a limit.
    const el = ref.current;
    if (!el) return;
    el.style.height = 'auto';
    el.style.height = `${Math.min(el.scrollHeight, 240)}px`;
  }, [text]);
  const disabled = readOnly || starting;
  const send = () => {
    if (disabled || !text.trim()) return;
    onSend(text);
    setText('');
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (menuOpen && !e.isComposing) {
      const at = Math.min(selected, matches.length - 1);
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        setSelected((at + (e.key === 'ArrowDown' ? 1 : matches.length - 1)) % matches.length);
        return;
      }
      // Enter completes a partial command word; on a word that already is
      // the selected command ("/hang" typed in full) it sends, as without
      // the list. Tab always completes.
      const complete = text === `/${matches[at]!.name}`;
      if ((e.key === 'Enter' && !e.shiftKey && !complete) || e.key === 'Tab') {
        e.preventDefault();
        pick(matches[at]!);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault(); // closes the menu; a second Esc cancels the turn
        setDismissedAt(text);
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
      e.preventDefault();
      send();
    } else if (e.key === 'Escape' && busy) {
      e.preventDefault();
      onCancel();
    }
  };
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <textarea
        ref={ref}
        rows={1}
        value={text}
        disabled={readOnly}
        readOnly={starting}
        aria-label={t('composer.label')}
        aria-describedby={`hint-${sessionId}`}
        placeholder={starting ? t('composer.starting') : t('composer.placeholder')}
        onInput={(e) => {
          setText((e.currentTarget as HTMLTextAreaElement).value);
          setSelected(0);
        }}
        aria-autocomplete="list"
        aria-controls={menuOpen ? menuId : undefined}
        aria-activedescendant={menuOpen ? `${menuId}-${Math.min(selected, matches.length - 1)}` : undefined}
        onKeyDown={onKeyDown}
        data-testid="composer-input"
        aria-disabled={disabled ? 'true' : undefined}
      />
      {menuOpen && <SlashMenu id={menuId} matches={matches} selected={Math.min(selected, matches.length - 1)} onPick={pick} />}
      <div class="composer__actions">
        {busy && (
          <button type="button" class="btn btn--danger" onClick={onCancel} disabled={cancelling} data-testid="cancel">
            {cancelling ? <Spinner /> : <IconStop />} {cancelling ? t('composer.cancelling') : t('composer.cancel')}
          </button>
        )}
        <button type="submit" class="btn btn--primary" disabled={disabled || !text.trim()} data-testid="send">
          {starting ? <Spinner /> : null}
          {t('composer.send')}
        </button>
      </div>
      {props.options && (
        <SessionOptions
          options={props.options}
          disabled={readOnly}
          onSetMode={(id) => props.onSetMode?.(id)}
          onSetConfig={(id, v) => props.onSetConfig?.(id, v)}
        />
      )}
      <p id={`hint-${sessionId}`} class="composer__hint">
        {t('composer.hint')}
      </p>
    </form>
  );
}
