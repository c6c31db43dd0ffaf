// Browser notifications (opt-in, from the inbox): while the shell's tab is
// hidden, a permission request, the end of a turn, a stalled turn or a turn
// a budget stopped shows a notification; clicking it opens the session.
//
// One tab of the browser notifies: the one that reads the shared global
// stream (shared-global.ts). Every tab hears every event, and a
// notification from each hidden tab would say the same thing several times.
// The tag names the item (a permission) or the session (a turn), so a newer
// notice of the same thing replaces the older one instead of piling up.
import { reasonText, translate, type Lang } from '../i18n';
import { duration } from '../lib/time';
import { BUDGET_EXCEEDED } from './budget';
import type { GlobalFeed } from './tasks-state';
import type { TetherEvent } from './types';

export interface Notice {
  title: string;
  body: string;
  tag: string;
  sessionId: string;
}

/** What the notifier needs of the browser; tests pass a fake. */
export interface NotifyEnv {
  /** The person turned notifications on (the inbox's toggle). */
  enabled(): boolean;
  /** Notification.permission, or unsupported without the API. */
  permission(): NotificationPermission | 'unsupported';
  /** The page is not seen (document.visibilityState). */
  hidden(): boolean;
  show(n: Notice, onClick: () => void): void;
}

/** The notice an event deserves, or none. */
export function noticeFor(ev: TetherEvent, name: (sessionId: string) => string, lang: Lang): Notice | undefined {
  const d = ev.data as Record<string, unknown>;
  const sessionId = typeof d.sessionId === 'string' ? d.sessionId : undefined;
  if (!sessionId) return undefined;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const n = name(sessionId);
  const turn = (key: Parameters<typeof translate>[1], body: string): Notice => ({ title: translate(lang, key, { name: n }), body, tag: `turn:${sessionId}`, sessionId });
  switch (ev.type as string) {
    case 'permission.requested':
      return {
        title: translate(lang, 'inbox.notify.permission', { name: n }),
        body: str(d.title),
        // The inbox item's id (docs/inbox.md): its answer elsewhere replaces nothing else.
        tag: `permission:${sessionId}:${str(d.requestId)}`,
        sessionId,
      };
    case 'turn.completed':
      return turn('inbox.notify.completed', '');
    case 'turn.failed':
      return turn('inbox.notify.failed', str(d.message));
    case 'turn.cancelled':
      // A queued prompt its client withdrew never ran: nothing ended. One a
      // budget stopped says so, as its budget.exceeded did (same tag).
      if (d.reason === BUDGET_EXCEEDED) return turn('budget.notify', str(d.message));
      return d.reason === 'withdrawn' ? undefined : turn('inbox.notify.cancelled', '');
    case 'budget.exceeded':
      return turn('budget.notify', str(d.message));
    case 'turn.interrupted':
      return turn('inbox.notify.interrupted', reasonText(lang, str(d.reason)));
    case 'turn.stalled': {
      // How long its agent has been silent: since it was last heard from.
      const silent = Date.parse(str(d.stalledAt)) - Date.parse(str(d.since));
      return turn('inbox.notify.stalled', Number.isNaN(silent) ? '' : translate(lang, 'budget.silent', { duration: duration(silent, lang) }));
    }
    default:
      return undefined;
  }
}

export class InboxNotifier {
  #feed: Pick<GlobalFeed, 'onEvent' | 'leads'>;
  #env: NotifyEnv;
  #describe: (ev: TetherEvent) => Notice | undefined;
  #open: (sessionId: string) => void;

  constructor(feed: Pick<GlobalFeed, 'onEvent' | 'leads'>, env: NotifyEnv, describe: (ev: TetherEvent) => Notice | undefined, open: (sessionId: string) => void) {
    this.#feed = feed;
    this.#env = env;
    this.#describe = describe;
    this.#open = open;
  }

  /** Listens to the feed; returns the way to stop. */
  start(): () => void {
    return this.#feed.onEvent((ev) => this.hear(ev));
  }

  hear(ev: TetherEvent): void {
    const env = this.#env;
    if (!env.enabled() || env.permission() !== 'granted' || !env.hidden() || !this.#feed.leads()) return;
    const n = this.#describe(ev);
    if (n) env.show(n, () => this.#open(n.sessionId));
  }
}
