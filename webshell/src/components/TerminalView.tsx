// The workspace panel's Terminal tab: the session's terminals on its
// executor, one shown at a time in xterm.js. A terminal outlives the page:
// after a reload the panel picks it again and replays what the executor
// kept (the last 1 MiB), then follows it live; a dropped connection is
// reopened from the last byte offset received (state/terminal-link.ts).
import { useEffect, useRef, useState } from 'preact/hooks';
import { useT } from '../i18n';
import { errorCode, errorText } from '../lib/errors';
import { load, save } from '../lib/storage';
import { TerminalLink, type TerminalLinkState } from '../state/terminal-link';
import type { WorkspaceApi } from '../state/types';
import { Spinner } from './Badges';

interface TermItem {
  id: string;
  exited: boolean;
  exitCode?: number;
}

const pickedKey = (sessionId: string) => `tether.terminal.${sessionId}`;

export function TerminalsView({ api, sessionId }: { api: WorkspaceApi; sessionId: string }) {
  const { t } = useT();
  const [items, setItems] = useState<TermItem[] | undefined>();
  const [picked, setPicked] = useState<string | undefined>();
  const [error, setError] = useState<{ code?: string; text: string } | undefined>();
  const [busy, setBusy] = useState(false);

  const refresh = (prefer?: string) =>
    api.terminals.list().then(
      (r) => {
        const list = r.terminals.map((x) => ({ id: x.id, exited: x.exited, ...(x.exitCode !== undefined ? { exitCode: x.exitCode } : {}) }));
        setItems(list);
        setError(undefined);
        const saved = prefer ?? load<string | undefined>(pickedKey(sessionId), undefined);
        const live = [...list].reverse().find((x) => !x.exited);
        const next = list.find((x) => x.id === saved) ?? live;
        setPicked(next?.id);
      },
      (e: unknown) => setError({ code: errorCode(e), text: errorText(e) }),
    );
  useEffect(() => void refresh(), [api, sessionId]);
  useEffect(() => {
    if (picked) save(pickedKey(sessionId), picked);
  }, [picked, sessionId]);

  const openNew = () => {
    setBusy(true);
    api.terminals
      .open()
      .then((term) => refresh(term.id))
      .catch((e: unknown) => setError({ code: errorCode(e), text: errorText(e) }))
      .finally(() => setBusy(false));
  };
  const end = () => {
    if (!picked) return;
    api.terminals
      .close(picked)
      .catch(() => undefined)
      .then(() => refresh());
  };

  if (error?.code === 'terminal_disabled')
    return (
      <div class="ws__note" data-testid="ws-terminal-disabled">
        {t('ws.term.disabled')}
      </div>
    );
  return (
    <div class="terms" data-testid="ws-terminals">
      <div class="ws__bar">
        {items && items.length > 1 && (
          <select aria-label={t('ws.term.pick')} value={picked} onChange={(e) => setPicked((e.currentTarget as HTMLSelectElement).value)}>
            {items.map((x, i) => (
              <option key={x.id} value={x.id}>
                {t(x.exited ? 'ws.term.itemExited' : 'ws.term.item', { n: i + 1 })}
              </option>
            ))}
          </select>
        )}
        <button type="button" class="btn btn--small" onClick={openNew} disabled={busy} data-testid="ws-terminal-new">
          {t('ws.term.new')}
        </button>
        {picked && (
          <button type="button" class="btn btn--ghost btn--small" onClick={end} data-testid="ws-terminal-end">
            {t('ws.term.end')}
          </button>
        )}
      </div>
      {error && (
        <div class="ws__note ws__note--error" role="alert">
          {error.text}
        </div>
      )}
      {!items && !error && (
        <div class="ws__note">
          <Spinner /> {t('ws.loading')}
        </div>
      )}
      {items && !picked && <div class="ws__note">{t('ws.term.none')}</div>}
      {picked && <XTermScreen key={picked} api={api} terminalId={picked} />}
    </div>
  );
}

/** One terminal in xterm.js, loaded on first use (it is most of the panel's code). */
function XTermScreen({ api, terminalId }: { api: WorkspaceApi; terminalId: string }) {
  const { t } = useT();
  const ref = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<TerminalLinkState>('connecting');
  const [exitCode, setExitCode] = useState<number | undefined>();
  const linkRef = useRef<TerminalLink>();

  useEffect(() => {
    let disposed = false;
    let cleanup = () => {};
    void Promise.all([import('@xterm/xterm'), import('@xterm/addon-fit'), import('@xterm/xterm/css/xterm.css')]).then(([{ Terminal }, { FitAddon }]) => {
      const el = ref.current;
      if (disposed || !el) return;
      const css = getComputedStyle(el);
      const term = new Terminal({
        cursorBlink: true,
        fontFamily: css.getPropertyValue('--mono') || 'monospace',
        fontSize: 13,
        scrollback: 5000,
        theme: { background: css.getPropertyValue('--term-bg').trim() || '#11141c', foreground: css.getPropertyValue('--term-fg').trim() || '#e6e8ef' },
      });
      const fit = new FitAddon();
      term.loadAddon(fit);
      term.open(el);
      const link = new TerminalLink(api.terminals, terminalId, {
        onData: (d) => term.write(d),
        onState: (s, code) => {
          setState(s);
          if (s === 'exited') setExitCode(code);
        },
      });
      linkRef.current = link;
      const refit = () => {
        if (el.clientWidth === 0 || el.clientHeight === 0) return; // a hidden tab
        fit.fit();
        link.resize(term.cols, term.rows);
      };
      refit();
      const typed = term.onData((d) => link.send(d));
      const bin = term.onBinary((d) => link.send(d));
      const ro = new ResizeObserver(refit);
      ro.observe(el);
      cleanup = () => {
        ro.disconnect();
        typed.dispose();
        bin.dispose();
        link.dispose();
        term.dispose();
      };
    });
    return () => {
      disposed = true;
      cleanup();
    };
  }, [api, terminalId]);

  return (
    <div class="term" data-testid="terminal" data-terminal-id={terminalId} data-state={state}>
      {state !== 'open' && state !== 'closed' && (
        <div class={`term__status term__status--${state}`} role="status">
          {(state === 'connecting' || state === 'reconnecting') && <Spinner />}{' '}
          {state === 'connecting'
            ? t('ws.term.connecting')
            : state === 'reconnecting'
              ? t('ws.term.reconnecting')
              : state === 'exited'
                ? t('ws.term.exited', { code: exitCode ?? '?' })
                : t('ws.term.gone')}
          {state === 'reconnecting' && (
            <button type="button" class="btn btn--link" onClick={() => linkRef.current?.retry()}>
              {t('exec.retry')}
            </button>
          )}
        </div>
      )}
      <div class="term__screen" ref={ref} onClick={() => ref.current?.querySelector('textarea')?.focus()} />
    </div>
  );
}
