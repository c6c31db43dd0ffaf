import { useEffect, useRef, useState } from 'preact/hooks';
import { useT } from '../i18n';
import { newPromptId } from '../lib/ids';
import { completeMention, mentionAt, mentionMatches, mentionedPaths } from '../lib/mentions';
import { IMAGE_TYPES, ImageError, readImage, type ImageAttachment } from '../lib/prompt-blocks';
import { Attachments } from './Attachments';
import { Spinner } from './Badges';
import { IconImage, IconStop } from './Icons';
import { MentionMenu } from './MentionMenu';
import { SessionOptions } from './SessionOptions';
import { SlashMenu, slashMatches } from './SlashMenu';
import type { AvailableCommand, SessionOptionsView, WorkspaceEntry, WorkspaceListing } from '../state/types';

/** What a message carries besides its text. */
export interface ComposerExtras {
  images: ImageAttachment[];
  /** The workspace paths picked from the `@` list that the text still names. */
  mentions: string[];
}

export interface ComposerProps {
  sessionId: string;
  /** The agent is starting: typing is allowed, sending is not. */
  starting: boolean;
  readOnly: boolean;
  busy: boolean;
  cancelling: boolean;
  autoFocus?: boolean;
  onSend: (text: string, extras: ComposerExtras) => void;
  onCancel: () => void;
  /** The agent's slash commands: typing "/" offers them. */
  commands?: AvailableCommand[];
  /** The agent's modes and config options, with their pickers. */
  options?: SessionOptionsView;
  onSetMode?: (modeId: string) => void;
  onSetConfig?: (optionId: string, value: string | boolean) => void;
  /** The agent takes images (its promptCapabilities): paste, drop and Attach offer them. */
  images?: boolean;
  /** Lists a workspace directory for `@` completion; absent, `@` is plain text. */
  listDir?: (path: string) => Promise<WorkspaceListing>;
}

type Listing = WorkspaceEntry[] | 'loading' | 'error';

/**
 * Enter sends, Shift+Enter inserts a newline, Esc cancels the running turn.
 * "/" opens the agent's commands and "@" the workspace's files: arrows move,
 * Enter or Tab picks, Esc closes; Enter on a command typed in full sends it.
 * Images are pasted, dropped or attached (when the agent takes them).
 */
export function Composer(props: ComposerProps) {
  const { sessionId, starting, readOnly, busy, cancelling, autoFocus, onSend, onCancel, listDir } = props;
  const { t } = useT();
  const [text, setText] = useState('');
  const [caret, setCaret] = useState(0);
  const [images, setImages] = useState<ImageAttachment[]>([]);
  const [picked, setPicked] = useState<Set<string>>(() => new Set());
  const [note, setNote] = useState<string>();
  const [dragging, setDragging] = useState(false);
  const [listings, setListings] = useState<Map<string, Listing>>(() => new Map());
  const ref = useRef<HTMLTextAreaElement>(null);
  const fileRef = useRef<HTMLInputElement>(null);
  // The open list (commands or files): which entry is selected, and the text it was closed at (Esc).
  const [selected, setSelected] = useState(0);
  const [dismissedAt, setDismissedAt] = useState<string | null>(null);
  const dismissed = dismissedAt === text;
  const mention = listDir && !dismissed ? mentionAt(text, caret) : null;
  const listing = mention ? listings.get(mention.dir) : undefined;
  const files = mention && Array.isArray(listing) ? mentionMatches(listing, mention.prefix) : [];
  const commands = dismissed || mention ? [] : slashMatches(text, props.commands ?? []);
  const menuOpen = !!mention || commands.length > 0;
  const count = mention ? files.length : commands.length;
  const at = Math.min(selected, Math.max(0, count - 1));
  const menuId = `${mention ? 'mention' : 'slash'}-${sessionId}`;

  useEffect(() => {
    // List the directory being mentioned, once per composer.
    if (!mention || !listDir || listings.has(mention.dir)) return;
    const dir = mention.dir;
    setListings((m) => new Map(m).set(dir, 'loading'));
    listDir(dir).then(
      (l) => setListings((m) => new Map(m).set(dir, l.entries)),
      () => setListings((m) => new Map(m).set(dir, 'error')),
    );
  }, [mention?.dir, listDir]);
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

  const edit = (next: string, at: number) => {
    setText(next);
    setCaret(at);
    setSelected(0);
    requestAnimationFrame(() => ref.current?.setSelectionRange(at, at));
  };
  const pickCommand = (c: AvailableCommand) => {
    edit(`/${c.name} `, c.name.length + 2);
    ref.current?.focus();
  };
  const pickFile = (e: WorkspaceEntry) => {
    if (!mention) return;
    const done = completeMention(text, mention, e);
    if (e.type !== 'dir') setPicked((p) => new Set(p).add(e.path));
    edit(done.text, done.caret);
    ref.current?.focus();
  };
  const addImages = async (list: File[]) => {
    const wanted = list.filter((f) => f.type.startsWith('image/'));
    if (wanted.length === 0) {
      setNote(t(props.images ? 'composer.onlyImages' : 'composer.noImages'));
      return;
    }
    if (!props.images) {
      setNote(t('composer.noImages'));
      return;
    }
    setNote(undefined);
    for (const f of wanted) {
      try {
        const img = await readImage(f, newPromptId('img'));
        setImages((xs) => [...xs, img]);
      } catch (e) {
        setNote(e instanceof ImageError ? e.message : t('composer.imageFailed', { name: f.name }));
      }
    }
  };

  const disabled = readOnly || starting;
  const empty = !text.trim() && images.length === 0;
  const send = () => {
    if (disabled || empty) return;
    onSend(text, { images, mentions: mentionedPaths(text, picked) });
    setText('');
    setCaret(0);
    setImages([]);
    setPicked(new Set());
    setNote(undefined);
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (menuOpen && !e.isComposing) {
      if ((e.key === 'ArrowDown' || e.key === 'ArrowUp') && count > 0) {
        e.preventDefault();
        setSelected((at + (e.key === 'ArrowDown' ? 1 : count - 1)) % count);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault(); // closes the list; a second Esc cancels the turn
        setDismissedAt(text);
        return;
      }
      if (mention && count > 0 && ((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab')) {
        e.preventDefault();
        pickFile(files[at]!);
        return;
      }
      // Enter completes a partial command word; on a word that already is
      // the selected command ("/hang" typed in full) it sends, as without
      // the list. Tab always completes.
      if (!mention && count > 0) {
        const complete = text === `/${commands[at]!.name}`;
        if ((e.key === 'Enter' && !e.shiftKey && !complete) || e.key === 'Tab') {
          e.preventDefault();
          pickCommand(commands[at]!);
          return;
        }
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
  const track = (el: HTMLTextAreaElement) => setCaret(el.selectionStart ?? el.value.length);
  return (
    <form
      class={`composer${dragging ? ' composer--drop' : ''}`}
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
      onDragOver={(e) => {
        if (!e.dataTransfer?.types.includes('Files')) return;
        e.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(e) => {
        setDragging(false);
        const list = Array.from(e.dataTransfer?.files ?? []);
        if (list.length === 0) return;
        e.preventDefault();
        void addImages(list);
      }}
    >
      <Attachments images={images} onRemove={(id) => setImages((xs) => xs.filter((x) => x.id !== id))} />
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
          setText(e.currentTarget.value);
          track(e.currentTarget);
          setSelected(0);
        }}
        onKeyUp={(e) => {
          if (e.key.startsWith('Arrow') && !menuOpen) track(e.currentTarget);
        }}
        onClick={(e) => track(e.currentTarget)}
        onPaste={(e) => {
          const list = Array.from(e.clipboardData?.files ?? []);
          if (!list.some((f) => f.type.startsWith('image/'))) return; // text pastes as text
          e.preventDefault();
          void addImages(list);
        }}
        aria-autocomplete="list"
        aria-controls={menuOpen && count > 0 ? menuId : undefined}
        aria-activedescendant={menuOpen && count > 0 ? `${menuId}-${at}` : undefined}
        onKeyDown={onKeyDown}
        data-testid="composer-input"
        aria-disabled={disabled ? 'true' : undefined}
      />
      {mention && (
        <MentionMenu
          id={menuId}
          dir={mention.dir}
          matches={files}
          selected={at}
          status={listing === 'loading' || listing === undefined ? 'loading' : listing === 'error' ? 'error' : 'ready'}
          onPick={pickFile}
        />
      )}
      {!mention && commands.length > 0 && <SlashMenu id={menuId} matches={commands} selected={at} onPick={pickCommand} />}
      {note && (
        <p class="composer__note" role="alert" data-testid="composer-note">
          {note}
        </p>
      )}
      <div class="composer__actions">
        {props.images && (
          <>
            <input
              ref={fileRef}
              type="file"
              accept={IMAGE_TYPES.join(',')}
              multiple
              hidden
              data-testid="attach-input"
              onChange={(e) => {
                void addImages(Array.from(e.currentTarget.files ?? []));
                e.currentTarget.value = '';
              }}
            />
            <button
              type="button"
              class="btn composer__attach"
              disabled={readOnly}
              onClick={() => fileRef.current?.click()}
              aria-label={t('composer.attachLabel')}
              title={t('composer.attachLabel')}
              data-testid="attach"
            >
              <IconImage /> <span class="composer__attach-text">{t('composer.attach')}</span>
            </button>
          </>
        )}
        {busy && (
          <button type="button" class="btn btn--danger" onClick={onCancel} disabled={cancelling} data-testid="cancel">
            {cancelling ? <Spinner /> : <IconStop />} {cancelling ? t('composer.cancelling') : t('composer.cancel')}
          </button>
        )}
        <button type="submit" class="btn btn--primary" disabled={disabled || empty} data-testid="send">
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
        {props.images ? t('composer.hintImages') : t('composer.hint')}
      </p>
    </form>
  );
}
