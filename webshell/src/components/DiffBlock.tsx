// A diff drawn by lib/diff-render, loaded on first use. Until it is (or if
// it cannot be: a chunk lost to an upgrade of the daemon) the patch shows
// as plain text.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useT } from '../i18n';
import { load, save } from '../lib/storage';
import '../diffs.css';
import type { DiffFormat, Edit } from '../lib/diff-render';

type Renderer = typeof import('../lib/diff-render');
let renderer: Promise<Renderer> | undefined;
const loadRenderer = () => (renderer ??= import('../lib/diff-render'));

export interface DiffBlockProps {
  /** A unified patch, or an edit to make one of. */
  patch?: string;
  edit?: Edit;
  format: DiffFormat;
  testId?: string;
  path?: string;
  /** The block scrolls by itself (a height limit): it takes the keyboard's focus to be scrolled. */
  focusable?: boolean;
}

export function DiffBlock({ patch, edit, format, testId, path, focusable }: DiffBlockProps) {
  const ref = useRef<HTMLDivElement>(null);
  const key = patch ?? JSON.stringify(edit);
  // The last draw that finished, and what it drew: the block says "drawn"
  // only for the patch and format it shows now (a format just switched
  // is "loading" until redrawn, while the previous drawing stays up).
  const id = `${format}\n${key}`;
  const [done, setDone] = useState<{ id: string; ok: boolean }>();
  const state = done?.id !== id ? 'loading' : done.ok ? 'drawn' : 'failed';
  useEffect(() => {
    let live = true;
    loadRenderer().then(
      (r) => {
        if (!live || !ref.current) return;
        try {
          r.drawDiff(ref.current, patch ?? r.patchOfEdit(edit!), format);
          setDone({ id, ok: true });
        } catch (e) {
          // The plain patch stays: better than nothing, and said in the console.
          console.error('diff not drawn:', e);
          ref.current.textContent = '';
          setDone({ id, ok: false });
        }
      },
      () => live && setDone({ id, ok: false }),
    );
    return () => {
      live = false;
    };
  }, [key, format]);
  return (
    <div class="diff2" tabIndex={focusable ? 0 : undefined} data-testid={testId} data-path={path} data-format={format} data-state={state}>
      {/* diff2html owns this element's children; Preact never renders into it. */}
      <div ref={ref} class="diff2__drawn" />
      {!done?.ok && <pre class="diff2__plain">{patch ?? edit?.newText ?? ''}</pre>}
    </div>
  );
}

const FORMAT_KEY = 'tether.diffFormat';

/** The format the user last picked; side by side where there is room for it. */
export function useDiffFormat(): [DiffFormat, (f: DiffFormat) => void] {
  const [format, setFormat] = useState<DiffFormat>(() => {
    const saved = load<string>(FORMAT_KEY, '');
    if (saved === 'side-by-side' || saved === 'line-by-line') return saved;
    // The workspace panel gets about a third of the window: side by side
    // needs a wide one.
    return globalThis.matchMedia?.('(min-width: 1600px)').matches ? 'side-by-side' : 'line-by-line';
  });
  return [
    format,
    (f) => {
      save(FORMAT_KEY, f);
      setFormat(f);
    },
  ];
}

/** Side by side or unified, as two toggle buttons. */
export function DiffFormatSwitch({ format, onFormat }: { format: DiffFormat; onFormat: (f: DiffFormat) => void }) {
  const { t } = useT();
  const opt = (f: DiffFormat, label: string) => (
    <button type="button" class={`seg__btn${format === f ? ' seg__btn--on' : ''}`} aria-pressed={format === f} onClick={() => onFormat(f)} data-testid={`diff-format-${f}`}>
      {label}
    </button>
  );
  return (
    <div class="seg" role="group" aria-label={t('ws.changes.format')}>
      {opt('side-by-side', t('ws.changes.sideBySide'))}
      {opt('line-by-line', t('ws.changes.unified'))}
    </div>
  );
}
