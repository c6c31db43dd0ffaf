// The browser's side of the notifications (state/inbox-notify.ts): the
// person's choice in localStorage, the Notification API, the page's
// visibility.
import type { Notice, NotifyEnv } from '../state/inbox-notify';
import { load, save } from './storage';

const KEY = 'tether.notify';

export function notificationsSupported(): boolean {
  return typeof Notification !== 'undefined';
}

export function notificationPermission(): NotificationPermission | 'unsupported' {
  return notificationsSupported() ? Notification.permission : 'unsupported';
}

/** The choice is read at each event: a change in another tab counts at once. */
export function notifyChosen(): boolean {
  return load<boolean>(KEY, false) === true;
}

export function chooseNotify(on: boolean): void {
  save(KEY, on);
}

/** Asks the browser (on the person's click); the answer decides the choice. */
export async function enableNotify(): Promise<NotificationPermission | 'unsupported'> {
  if (!notificationsSupported()) return 'unsupported';
  let p: NotificationPermission;
  try {
    p = await Notification.requestPermission();
  } catch {
    p = Notification.permission;
  }
  chooseNotify(p === 'granted');
  return p;
}

export function browserNotifyEnv(): NotifyEnv {
  return {
    enabled: notifyChosen,
    permission: notificationPermission,
    hidden: () => document.visibilityState === 'hidden',
    show(n: Notice, onClick: () => void) {
      try {
        const note = new Notification(n.title, { body: n.body, tag: n.tag });
        note.onclick = () => {
          window.focus();
          onClick();
          note.close();
        };
      } catch {
        // Some browsers (Android Chrome) allow notifications from a service
        // worker only: the inbox still shows what waits.
      }
    },
  };
}
