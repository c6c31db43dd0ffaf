// The top of the timeline, where its history goes on: earlier items that
// are loaded but not drawn yet (Timeline draws a window of them), then the
// older pages of turns the daemon has not sent yet (the pane loads the
// latest page first). One control at a time, in one place, so that what
// the reader sees below it does not move while it changes.
import { useT } from '../i18n';
import type { HistoryView } from '../state/session-state';
import { Spinner } from './Badges';

export interface TimelineHeadProps {
  /** Loaded items above the drawn window. */
  hidden: number;
  history: HistoryView;
  /** Draws the hidden items (a window more). */
  onEarlier: () => void;
  /** Reads the next older page; absent where the pane cannot (nothing is offered then). */
  onOlder?: () => void;
}

export function TimelineHead({ hidden, history, onEarlier, onOlder }: TimelineHeadProps) {
  const { t } = useT();
  if (hidden > 0)
    return (
      <button type="button" class="btn btn--link timeline__earlier" onClick={onEarlier} data-testid="show-earlier" data-head>
        {t('pane.earlier', { n: hidden })}
      </button>
    );
  if (history.error && onOlder)
    return (
      <div class="timeline__earlier timeline__history-error" role="alert" data-testid="earlier-turns-error" data-head>
        {t('history.failed', { error: history.error })}{' '}
        <button type="button" class="btn btn--link" onClick={onOlder} data-testid="earlier-turns-retry">
          {t('history.retry')}
        </button>
      </div>
    );
  if (history.next && onOlder)
    // The same button while the page is read (busy, and a click does
    // nothing): the keyboard's focus stays on it, and nothing moves.
    return (
      <button
        type="button"
        class="btn btn--link timeline__earlier"
        aria-busy={history.loading ? 'true' : undefined}
        aria-disabled={history.loading ? 'true' : undefined}
        onClick={history.loading ? undefined : onOlder}
        data-testid="show-earlier-turns"
        data-loading={history.loading ? 'true' : undefined}
        data-head
      >
        {history.loading && (
          <>
            <Spinner />{' '}
          </>
        )}
        {t(history.loading ? 'history.loading' : 'history.earlier')}
      </button>
    );
  // Said only where earlier pages were read: a short session needs no mark.
  if (history.pages > 0)
    return (
      <p class="timeline__start" data-testid="session-start" data-head>
        {t('history.start')}
      </p>
    );
  return null;
}
