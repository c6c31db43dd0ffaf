import { useEffect, useRef, useState } from 'preact/hooks';
import { useT } from '../i18n';
import { Spinner } from './Badges';
import { IconStop } from './Icons';

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
}

/** Enter sends, Shift+Enter inserts a newline, Esc cancels the running turn. */
export function Composer({ sessionId, starting, readOnly, busy, cancelling, autoFocus, onSend, onCancel }: ComposerProps) {
  const { t } = useT();
  const [text, setText] = useState('');
  const ref = useRef<HTMLTextAreaElement>(null);
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
        onInput={(e) => setText((e.currentTarget as HTMLTextAreaElement).value)}
        onKeyDown={onKeyDown}
        data-testid="composer-input"
        aria-disabled={disabled ? 'true' : undefined}
      />
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
      <p id={`hint-${sessionId}`} class="composer__hint">
        {t('composer.hint')}
      </p>
    </form>
  );
}
